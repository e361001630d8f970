#include "kernel/kernel_server.hpp"

#include <cerrno>
#include <chrono>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <utility>
#include <variant>

#include <xeus/xhelper.hpp>

#include "core/thread_start.hpp"
#include "kernel/iopub_backlog.hpp"
#include "kernel/request_check.hpp"
#include "kernel/socket_io.hpp"

namespace interp_rpc::kernel {

namespace {

// How long close() may keep sending what is queued, as xeus-zmq does.
constexpr int linger_ms = 1000;
// A subscription event on the IOPub socket: this byte, then the topic.
constexpr unsigned char subscribe_event = 1;
// Whole messages zmq may hold for one IOPub subscriber. The socket does not
// drop past it (XPUB_NODROP): the io thread waits, the backlog fills, and
// publishers wait for the slowest subscriber.
constexpr int iopub_messages_per_subscriber = 256;
// How often the io thread tries again to send to a subscriber that is full:
// zmq reports no "writable" event for an XPUB socket.
constexpr std::chrono::milliseconds iopub_retry_interval(5);
// How long a shutdown waits for the subshells' running requests to end: the
// client kills a kernel that has not exited 5 s after its shutdown request.
constexpr std::chrono::milliseconds subshell_stop_grace(500);

const char* channel_name(xeus::channel c) { return c == xeus::channel::SHELL ? "shell" : "control"; }

std::string endpoint(const xeus::xkernel_configuration& config, const std::string& port) {
  // Jupyter's convention: tcp://ip:port, ipc://path-port.
  const char separator = config.m_transport == "tcp" ? ':' : '-';
  return config.m_transport + "://" + config.m_ip + separator + port;
}

zmq::socket_t bound_socket(zmq::context_t& context, zmq::socket_type type,
                           const xeus::xkernel_configuration& config, const std::string& port) {
  zmq::socket_t socket(context, type);
  socket.set(zmq::sockopt::linger, linger_ms);
  socket.bind(endpoint(config, port));
  return socket;
}

std::string bound_port(const zmq::socket_t& socket) {
  const std::string last = socket.get(zmq::sockopt::last_endpoint);
  return last.substr(last.find_last_of(":-") + 1);
}

// Sends the parts of `frames` from `next_part` on without waiting; returns
// whether all were sent. A subscriber that is full leaves next_part at the
// first part not sent, to be sent later: never half a message, never a drop.
bool send_frames_without_waiting(zmq::socket_t& socket, frame_list& frames,
                                 std::size_t& next_part) {
  while (next_part < frames.size()) {
    const zmq::send_flags more =
        next_part + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none;
    try {
      if (!socket.send(frames[next_part], more | zmq::send_flags::dontwait)) {
        return false;
      }
      ++next_part;
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) {
        throw;
      }
    }
  }
  return true;
}

std::size_t byte_size(const frame_list& frames) {
  std::size_t total = 0;
  for (const zmq::message_t& frame : frames) {
    total += frame.size();
  }
  return total;
}

}  // namespace

nl::json kernel_server::no_debugger_messenger::send_to_shell_impl(const nl::json&) {
  return {{"status", "error"}, {"ename", "NotSupported"}, {"evalue", "this kernel has no debugger"}};
}

kernel_server::kernel_server(zmq::context_t& context, const xeus::xkernel_configuration& config,
                             nl::json::error_handler_t error_handler, int input_cancel_fd,
                             idle_waiter wait_while_idle, subshells* subshell_queues)
    : m_signer(config.m_signature_scheme, config.m_key),
      m_error_handler(error_handler),
      m_input_cancel_fd(input_cancel_fd),
      m_wait_while_idle(std::move(wait_while_idle)),
      p_subshells(subshell_queues),
      m_shell(bound_socket(context, zmq::socket_type::router, config, config.m_shell_port)),
      m_stdin(bound_socket(context, zmq::socket_type::router, config, config.m_stdin_port)),
      m_control(bound_socket(context, zmq::socket_type::router, config, config.m_control_port)),
      m_iopub(context, zmq::socket_type::xpub),
      m_heartbeat(bound_socket(context, zmq::socket_type::router, config, config.m_hb_port)) {
  m_iopub.set(zmq::sockopt::linger, linger_ms);
  // Every subscription is reported, so that each subscriber gets its welcome.
  m_iopub.set(zmq::sockopt::xpub_verbose, 1);
  // A slow frontend slows the kernel rather than losing output; one that
  // disconnects is forgotten by zmq, so it blocks nothing.
  m_iopub.set(zmq::sockopt::sndhwm, iopub_messages_per_subscriber);
  m_iopub.set(zmq::sockopt::xpub_nodrop, 1);
  m_iopub.bind(endpoint(config, config.m_iopub_port));
  m_shell_fd = m_shell.get(zmq::sockopt::fd);
  if (p_subshells != nullptr) {
    p_subshells->set_main_poster([this](std::function<void()> task) { post_to_main(std::move(task)); });
    // A subshell created while the main thread is busy: the router starts
    // watching the socket for its requests.
    p_subshells->set_created_listener([this] { m_router_wake.notify(); });
  }
}

kernel_server::~kernel_server() { stop_threads(); }

void kernel_server::stop_threads() noexcept {
  m_stopping = true;
  iopub_backlog::shared().stop();
  m_control_wake.notify();
  if (m_control_thread.joinable()) {
    m_control_thread.join();
  }
  {
    std::lock_guard lock(m_shell_mutex);
    m_router_stopping = true;
  }
  m_router_wake.notify();
  if (m_shell_router_thread.joinable()) {
    m_shell_router_thread.join();
  }
  {
    // Every reply made so far is sent: each thread sends its own.
    std::lock_guard lock(m_shell_mutex);
    m_shell_closed = true;
  }
  {
    std::lock_guard lock(m_outbox_mutex);
    m_io_stopping = true;
  }
  m_io_wake.notify();
  if (m_io_thread.joinable()) {
    m_io_thread.join();  // after sending what is queued
  }
}

xeus::xcontrol_messenger& kernel_server::get_control_messenger_impl() { return m_messenger; }

void kernel_server::send_control_impl(xeus::xmessage message) {
  frame_list frames = serialize_message(message, m_signer, m_error_handler);
  send_frames(m_control, frames);
}

void kernel_server::send_stdin_impl(xeus::xmessage message) {
  const std::lock_guard owner(m_stdin_mutex);
  const std::string request_id = message.header().value("msg_id", std::string());
  frame_list frames;
  // What is waiting answers an input request that was interrupted.
  while (receive_frames(m_stdin, frames)) {
    log_dropped("stdin", "a reply that arrived while no input request was pending");
  }
  frames = serialize_message(message, m_signer, m_error_handler);
  send_frames(m_stdin, frames);

  zmq::pollitem_t items[] = {{m_stdin.handle(), 0, ZMQ_POLLIN, 0},
                             {nullptr, m_shell_wake.fd(), ZMQ_POLLIN, 0},
                             {nullptr, m_input_cancel_fd, ZMQ_POLLIN, 0}};
  // Interrupts end the main thread's wait only: CPython raises
  // KeyboardInterrupt there alone, and ipykernel's other threads keep
  // waiting for their answer too.
  const std::size_t count =
      m_input_cancel_fd >= 0 && std::this_thread::get_id() == m_main_thread ? 3 : 2;
  while (true) {
    poll(items, count);
    if (count == 3 && readable(items[2])) {
      throw input_interrupted("the wait for input was interrupted");
    }
    if (m_stopping) {
      throw std::runtime_error("the kernel is shutting down");
    }
    while (receive_frames(m_stdin, frames)) {
      auto parsed = parse_message(frames, m_signer);
      if (auto* malformed = std::get_if<malformed_message>(&parsed)) {
        log_dropped("stdin", malformed->reason);
        continue;
      }
      xeus::xmessage& reply = std::get<xeus::xmessage>(parsed);
      // A reply to an input request that was interrupted must not answer
      // this one. Some clients (jupyter_client's input()) send no parent
      // header: their replies are taken as the answer.
      const auto parent_id = reply.parent_header().find("msg_id");
      if (reply.header()["msg_type"] != "input_reply" ||
          (parent_id != reply.parent_header().end() && *parent_id != request_id)) {
        log_dropped("stdin", "not the reply to the pending input request");
        continue;
      }
      const auto value = reply.content().find("value");
      if (value == reply.content().end() || !value->is_string()) {
        log_dropped("stdin", "an input_reply whose 'value' is not a string");
        continue;
      }
      notify_stdin_listener(std::move(reply));
      return;
    }
  }
}

void kernel_server::publish_impl(xeus::xpub_message message, xeus::channel) {
  queue_for_iopub(serialize_pub_message(message, m_signer, m_error_handler));
}

void kernel_server::queue_for_iopub(frame_list frames) {
  iopub_backlog::shared().queued(byte_size(frames));
  bool was_empty = false;
  {
    std::lock_guard lock(m_outbox_mutex);
    was_empty = m_outbox.empty();
    m_outbox.push_back(std::move(frames));
  }
  // The io thread takes the whole queue per wake: one wake per batch.
  if (was_empty) {
    m_io_wake.notify();
  }
}

void kernel_server::start_impl(xeus::xpub_message message) {
  m_main_thread = std::this_thread::get_id();
  m_status_topic = message.topic();
  m_user_name = message.header().value("username", std::string());
  m_session = message.header().value("session", std::string());
  publish_impl(std::move(message), xeus::channel::SHELL);
  // A thread that cannot start ends start(): the kernel exits, saying which
  // (main.cpp); the destructor stops the ones that did start.
  m_io_thread = core::start_thread("the kernel's IOPub thread", [this] { run_io_loop(); });
  m_shell_router_thread = core::start_thread("the kernel's shell router thread",
                                             [this] { run_shell_router_loop(); });
  m_control_thread =
      core::start_thread("the kernel's control thread", [this] { run_control_loop(); });
  run_shell_loop();
  if (p_subshells != nullptr) {
    // Before the threads that send their replies and output stop.
    p_subshells->stop(subshell_stop_grace);
  }
  stop_threads();
}

void kernel_server::run_control_loop() {
  zmq::pollitem_t items[] = {{m_control.handle(), 0, ZMQ_POLLIN, 0},
                             {nullptr, m_control_wake.fd(), ZMQ_POLLIN, 0}};
  const listener deliver = [this](xeus::xmessage request) {
    notify_control_listener(std::move(request));
  };
  frame_list frames;
  while (!m_stopping) {
    poll(items, 2);
    if (readable(items[1])) {
      m_control_wake.drain();
    }
    while (!m_stopping && receive_frames(m_control, frames)) {
      handle_request(frames, xeus::channel::CONTROL, deliver);
    }
  }
}

void kernel_server::run_io_loop() {
  zmq::pollitem_t items[] = {{m_iopub.handle(), 0, ZMQ_POLLIN, 0},
                             {m_heartbeat.handle(), 0, ZMQ_POLLIN, 0},
                             {nullptr, m_io_wake.fd(), ZMQ_POLLIN, 0}};
  frame_list frames;
  // Taken from the outbox, in order; the first may be partly sent. With each
  // message its size, which zmq's send takes from the frames.
  struct outgoing {
    frame_list frames;
    std::size_t bytes;
  };
  std::deque<outgoing> sending;
  std::size_t next_part = 0;
  bool stopping = false;
  std::optional<std::chrono::steady_clock::time_point> give_up_waiting_at;
  while (true) {
    // A subscriber that was full: look again soon. Otherwise wait for work.
    poll(items, 3, sending.empty() ? std::chrono::milliseconds(-1) : iopub_retry_interval);
    if (readable(items[0])) {
      while (receive_frames(m_iopub, frames)) {
        // Subscribers send single-frame events; anything else is noise.
        if (frames.size() == 1 && frames[0].size() > 0 &&
            *frames[0].data<unsigned char>() == subscribe_event) {
          // Before the queue, but never inside a message partly sent.
          frame_list welcome = welcome_frames(frames[0]);
          const std::size_t bytes = byte_size(welcome);
          iopub_backlog::shared().queued(bytes);
          sending.insert(sending.begin() + (next_part > 0 ? 1 : 0), {std::move(welcome), bytes});
        }
      }
    }
    if (readable(items[1])) {
      while (receive_frames(m_heartbeat, frames)) {
        send_frames(m_heartbeat, frames);  // the echo is the heartbeat
      }
    }
    if (readable(items[2])) {
      m_io_wake.drain();
      std::lock_guard lock(m_outbox_mutex);
      for (frame_list& message : m_outbox) {
        const std::size_t bytes = byte_size(message);
        sending.push_back({std::move(message), bytes});
      }
      m_outbox.clear();
      // stop_threads() set the flag after the last publisher: what was
      // taken with it held is everything.
      stopping = m_io_stopping;
    }
    while (!sending.empty() &&
           send_frames_without_waiting(m_iopub, sending.front().frames, next_part)) {
      iopub_backlog::shared().sent(sending.front().bytes);
      sending.pop_front();
      next_part = 0;
    }
    if (stopping && !sending.empty()) {
      // A subscriber that no longer reads must not hold the shutdown: after
      // as long as close() would linger, it is sent no more.
      const auto now = std::chrono::steady_clock::now();
      if (!give_up_waiting_at) {
        give_up_waiting_at = now + std::chrono::milliseconds(linger_ms);
      } else if (now >= *give_up_waiting_at) {
        std::cerr << "interp-rpc-kernel: an IOPub subscriber stopped reading during shutdown; "
                  << sending.size() << " messages are not sent to it" << std::endl;
        m_iopub.set(zmq::sockopt::xpub_nodrop, 0);
        for (outgoing& message : sending) {
          if (!send_frames_without_waiting(m_iopub, message.frames, next_part)) {
            break;
          }
          next_part = 0;
        }
        return;
      }
    }
    if (stopping && sending.empty()) {
      return;
    }
  }
}

frame_list kernel_server::welcome_frames(const zmq::message_t& subscription) const {
  // JEP 65: a subscriber learns that its subscription is live.
  const std::string topic(subscription.data<const char>() + 1, subscription.size() - 1);
  xeus::xpub_message welcome("", xeus::make_header("iopub_welcome", m_user_name, m_session),
                             nl::json::object(), nl::json::object(),
                             nl::json{{"subscription", topic}}, xeus::buffer_sequence());
  return serialize_pub_message(welcome, m_signer, m_error_handler);
}

void kernel_server::handle_request(const frame_list& frames, xeus::channel c,
                                   const listener& deliver) {
  auto parsed = parse_message(frames, m_signer);
  if (auto* malformed = std::get_if<malformed_message>(&parsed)) {
    log_dropped(channel_name(c), malformed->reason);
    return;
  }
  xeus::xmessage& request = std::get<xeus::xmessage>(parsed);
  const std::string problem = check_request(request, c);
  if (problem.empty()) {
    deliver_checked(std::move(request), c, deliver);
    return;
  }
  try {
    reject(request, problem, c);
  } catch (const std::exception& e) {
    std::cerr << "interp-rpc-kernel: error while rejecting a " << channel_name(c)
              << " request: " << e.what() << std::endl;
  }
}

void kernel_server::deliver_checked(xeus::xmessage request, xeus::channel c,
                                    const listener& deliver) {
  try {
    deliver(std::move(request));
  } catch (const std::exception& e) {
    // xeus handles its handlers' errors; this is for the rest (a reply it
    // could not serialize): the loop, hence the kernel, goes on.
    std::cerr << "interp-rpc-kernel: error while handling a " << channel_name(c)
              << " request: " << e.what() << std::endl;
  }
}

void kernel_server::reject(const xeus::xmessage& request, const std::string& problem,
                           xeus::channel c, const char* ename) {
  log_dropped(channel_name(c), "answered with an error: " + problem);
  const std::string msg_type = request.header()["msg_type"].get<std::string>();
  publish_impl(status_message(request.header(), "busy"), c);
  xeus::xmessage reply(request.identities(),
                       xeus::make_header(reply_type(msg_type), m_user_name, m_session),
                       request.header(), nl::json::object(),
                       xeus::create_error_reply(ename, problem), xeus::buffer_sequence());
  if (c == xeus::channel::SHELL) {
    send_shell_impl(std::move(reply));
  } else {
    send_control_impl(std::move(reply));
  }
  publish_impl(status_message(request.header(), "idle"), c);
}

xeus::xpub_message kernel_server::status_message(const nl::json& parent, const char* state) const {
  return xeus::xpub_message(m_status_topic, xeus::make_header("status", m_user_name, m_session),
                            parent, nl::json::object(), nl::json{{"execution_state", state}},
                            xeus::buffer_sequence());
}

void kernel_server::stop_impl() {
  m_stopping = true;
  iopub_backlog::shared().stop();
  m_shell_wake.notify();
  m_control_wake.notify();
  m_router_wake.notify();
}

void kernel_server::update_config_impl(xeus::xkernel_configuration& config) const {
  config.m_shell_port = bound_port(m_shell);
  config.m_stdin_port = bound_port(m_stdin);
  config.m_control_port = bound_port(m_control);
  config.m_iopub_port = bound_port(m_iopub);
  config.m_hb_port = bound_port(m_heartbeat);
}

xeus::xkernel::server_builder make_kernel_server_builder(int input_cancel_fd,
                                                         idle_waiter wait_while_idle,
                                                         subshells* subshell_queues) {
  return [input_cancel_fd, wait_while_idle, subshell_queues](xeus::xcontext& context, const xeus::xconfiguration& config,
                           nl::json::error_handler_t error_handler) -> std::unique_ptr<xeus::xserver> {
    const auto* kernel_config = std::get_if<xeus::xkernel_configuration>(&config);
    if (kernel_config == nullptr) {
      throw std::runtime_error(
          "kernel handshaking (a connection file without ports) is not supported: "
          "give the kernel a connection file that lists its ports");
    }
    return std::make_unique<kernel_server>(context.get_wrapped_context<zmq::context_t>(),
                                           *kernel_config, error_handler, input_cancel_fd,
                                           wait_while_idle, subshell_queues);
  };
}

}  // namespace interp_rpc::kernel
