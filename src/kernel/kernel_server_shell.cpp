// kernel_server's shell socket: replies sent by the thread that makes them,
// requests read by the idle main thread or the shell router thread and
// routed to the main thread's queue or a subshell's (see kernel_server.hpp).
#include <iostream>
#include <utility>
#include <variant>
#include <vector>

#include "kernel/kernel_server.hpp"
#include "kernel/request_check.hpp"
#include "kernel/socket_io.hpp"

namespace interp_rpc::kernel {

void kernel_server::send_shell_impl(xeus::xmessage message) {
  frame_list frames = serialize_message(message, m_signer, m_error_handler);
  bool request_waiting = false;
  {
    std::lock_guard lock(m_shell_mutex);
    if (m_shell_closed) {
      return;  // a subshell that outlived the shutdown
    }
    send_frames(m_shell, frames);
    // Sending may take the descriptor's signal for a request that arrived
    // meanwhile: then whoever watches would wait for ever. Tell both.
    request_waiting = (m_shell.get(zmq::sockopt::events) & ZMQ_POLLIN) != 0;
  }
  if (request_waiting) {
    m_inbox_wake.notify();
    m_router_wake.notify();
  }
}

void kernel_server::read_shell_requests() {
  // The main thread and the router thread both read. Without this lock, one
  // could route the requests it read after the other had read later ones
  // and routed them first: a burst of cells (Run All) would then run out of
  // order, and each cell's replies and outputs come after later cells'.
  std::lock_guard in_order(m_shell_read_mutex);
  std::vector<frame_list> requests;
  {
    std::lock_guard lock(m_shell_mutex);
    // Once stopping, requests still on the socket are not read.
    frame_list frames;
    while (!m_shell_closed && !m_stopping && receive_frames(m_shell, frames)) {
      requests.push_back(std::move(frames));
    }
  }
  // With m_shell_mutex released: routing may send an error reply.
  for (const frame_list& request : requests) {
    route_shell_request(request);
  }
}

void kernel_server::run_shell_loop() {
  const listener deliver = [this](xeus::xmessage request) {
    notify_shell_listener(std::move(request));
  };
  while (!m_stopping) {
    // Before looking: a request queued after this is signalled anew.
    m_inbox_wake.drain();
    m_shell_wake.drain();
    read_shell_requests();
    run_main_tasks();
    if (m_stopping) {
      break;
    }
    // One request at a time, so that a stop between two is seen at once.
    if (std::optional<xeus::xmessage> request = next_main_request()) {
      set_main_busy(true);
      deliver_checked(std::move(*request), xeus::channel::SHELL, deliver);
      set_main_busy(false);
      continue;
    }
    wait_for_shell();
  }
}

void kernel_server::set_main_busy(bool busy) {
  m_main_busy = busy;
  // Set before looking: a subshell created after the look wakes the router
  // itself (subshells' created listener), and finds the flag set.
  if (busy && p_subshells != nullptr && p_subshells->any()) {
    m_router_wake.notify();
  }
}

void kernel_server::wait_for_shell() {
  // zmq's descriptor signals a change of the socket's state, not that a
  // request is there: read_shell_requests() read all there was, which also
  // re-armed it.
  const int fds[] = {m_shell_fd, m_inbox_wake.fd(), m_shell_wake.fd()};
  if (m_wait_while_idle && m_wait_while_idle(fds)) {
    // What woke it, or nothing (an early return): the caller looks, and
    // comes back.
    return;
  }
  zmq::pollitem_t items[] = {{nullptr, fds[0], ZMQ_POLLIN, 0},
                             {nullptr, fds[1], ZMQ_POLLIN, 0},
                             {nullptr, fds[2], ZMQ_POLLIN, 0}};
  poll(items, 3);
}

void kernel_server::run_main_tasks() {
  std::deque<std::function<void()>> tasks;
  {
    std::lock_guard lock(m_inbox_mutex);
    tasks.swap(m_main_tasks);
  }
  if (tasks.empty()) {
    return;
  }
  // A task (starting IPython for a subshell) may take a while: the
  // subshells' requests are routed meanwhile.
  set_main_busy(true);
  for (std::function<void()>& task : tasks) {
    task();
  }
  set_main_busy(false);
}

std::optional<xeus::xmessage> kernel_server::next_main_request() {
  std::lock_guard lock(m_inbox_mutex);
  if (m_main_requests.empty()) {
    return std::nullopt;
  }
  std::optional<xeus::xmessage> request(std::move(m_main_requests.front()));
  m_main_requests.pop_front();
  return request;
}

void kernel_server::post_to_main(std::function<void()> task) {
  {
    std::lock_guard lock(m_inbox_mutex);
    m_main_tasks.push_back(std::move(task));
  }
  m_inbox_wake.notify();
}

void kernel_server::run_shell_router_loop() {
  zmq::pollitem_t items[] = {{nullptr, m_router_wake.fd(), ZMQ_POLLIN, 0},
                             {nullptr, m_shell_fd, ZMQ_POLLIN, 0}};
  while (true) {
    // The socket only while the main thread cannot read it: otherwise both
    // would wake for each request. A flag that changes after this look
    // comes with a wake (set_main_busy), or is a change to idle, after which
    // the main thread reads the socket itself.
    const bool watch_socket = m_main_busy && !m_stopping;
    poll(items, watch_socket ? 2 : 1);
    if (readable(items[0])) {
      m_router_wake.drain();
      std::lock_guard lock(m_shell_mutex);
      if (m_router_stopping) {
        return;
      }
    }
    if (m_main_busy) {
      read_shell_requests();
    }
  }
}

void kernel_server::route_shell_request(const frame_list& frames) {
  auto parsed = parse_message(frames, m_signer);
  if (auto* malformed = std::get_if<malformed_message>(&parsed)) {
    log_dropped("shell", malformed->reason);
    return;
  }
  xeus::xmessage& request = std::get<xeus::xmessage>(parsed);
  try {
    const std::string problem = check_request(request, xeus::channel::SHELL);
    if (!problem.empty()) {
      reject(request, problem, xeus::channel::SHELL);
      return;
    }
    const auto subshell_id = request.header().find("subshell_id");
    if (subshell_id != request.header().end() && !subshell_id->is_null()) {
      if (!subshell_id->is_string()) {
        reject(request, "header.subshell_id must be a string or null", xeus::channel::SHELL);
      } else if (p_subshells == nullptr ||
                 !p_subshells->deliver(subshell_id->get<std::string>(), request)) {
        reject(request,
               "no subshell has the id '" + subshell_id->get<std::string>() +
                   "' (it was deleted, or never created)",
               xeus::channel::SHELL, "SubshellNotFound");
      }
      return;
    }
    {
      std::lock_guard lock(m_inbox_mutex);
      m_main_requests.push_back(std::move(request));
    }
    // The main thread looks at its queue after reading the socket itself.
    if (std::this_thread::get_id() != m_main_thread) {
      m_inbox_wake.notify();
    }
  } catch (const std::exception& e) {
    std::cerr << "interp-rpc-kernel: error while routing a shell request: " << e.what()
              << std::endl;
  }
}

void kernel_server::abort_queue_impl(const listener& l, long polling_interval) {
  read_shell_requests();
  while (std::optional<xeus::xmessage> request = next_main_request()) {
    deliver_checked(std::move(*request), xeus::channel::SHELL, l);
    if (polling_interval > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(polling_interval));
    }
  }
}

}  // namespace interp_rpc::kernel
