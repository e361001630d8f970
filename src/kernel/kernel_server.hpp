// The kernel's zmq server: the five Jupyter sockets, with our own framing in
// place of xeus-zmq's server (src/kernel/README.md says why).
//
// Threads and sockets. Each socket but shell is used by one thread only:
// - shell is shared, under m_shell_mutex: any thread sends its own replies
//   on it, as it makes them. Requests are read by whichever thread watches
//   the socket, which checks each and routes it: a request whose header
//   names a subshell goes to that subshell's queue (subshells.hpp), any
//   other to the main thread's. Who watches:
//   - the main thread, while it is idle: the main shell's requests then
//     reach it with no thread in between, as before subshells existed;
//   - the shell router thread, while the main thread handles a request and
//     a subshell exists, so that the subshell's requests are routed at once.
//     With no subshell, requests wait in zmq until the main thread is free.
// - the main thread runs the shell loop in start(); it handles the main
//   shell's requests (CPython raises KeyboardInterrupt only there). Between
//   requests it waits in the idle waiter (the interpreter's asyncio loop,
//   which watches the shell socket, the main queue's wake pipe and the
//   stop's), or in zmq_poll when there is none; it also runs the tasks other
//   threads post to it (post_to_main);
// - the control thread owns control: interrupt and shutdown are served while
//   the main thread runs a cell;
// - stdin belongs to the thread that asks for input: the cell's, a thread
//   it started, a subshell's. They take turns (input.cpp), and the socket's
//   mutex hands it from one to the next;
// - the io thread owns IOPub and heartbeat. publish() from any thread (the
//   main thread, the control thread, any thread the user or the pool starts)
//   queues the signed frames; the io thread sends them in the order queued.
//   No publisher ever calls zmq, so none can be cut off halfway through a
//   multipart message, and the queue never drops a message. The IOPub socket
//   does not drop either (XPUB_NODROP): a subscriber that reads slowly makes
//   the io thread wait, the queue's bytes grow to their bound, and then the
//   publishers wait (iopub_backlog). A subscriber that disconnects holds
//   nothing up, nor does any at shutdown for longer than the linger time.
//
// Every message received is checked (wire_message, request_check) before
// xeus sees it. A message that fails the wire checks (no key, bad frames,
// bad JSON) is dropped with a line on stderr. A signed request xeus would
// misread gets an error reply, between busy and idle statuses.
//
// Every zmq call retries on EINTR: a signal may reach any thread.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <optional>
#include <string>
#include <thread>

#include <xeus/xeus_context.hpp>
#include <xeus/xkernel.hpp>
#include <xeus/xkernel_configuration.hpp>
#include <xeus/xserver.hpp>
#include <zmq.hpp>

#include "kernel/message_signer.hpp"
#include "kernel/subshells.hpp"
#include "kernel/wake_pipe.hpp"
#include "kernel/wire_message.hpp"

namespace interp_rpc::kernel {

// Main thread, between requests: waits until one of the descriptors is
// readable, doing other work meanwhile (the asyncio loop); it may return
// early. Returns false, at once, if it cannot wait (no loop yet): the shell
// loop then waits itself.
using idle_waiter = std::function<bool(std::span<const int> fds)>;

// The wait for an input reply ended because of an interrupt.
class input_interrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class kernel_server final : public xeus::xserver {
 public:
  // input_cancel_fd: readable when the wait for an input reply must end (the
  // interrupter's); -1 for none.
  // subshell_queues: where requests for a subshell go; nullptr for none.
  kernel_server(zmq::context_t& context, const xeus::xkernel_configuration& config,
                nl::json::error_handler_t error_handler, int input_cancel_fd,
                idle_waiter wait_while_idle, subshells* subshell_queues);
  ~kernel_server() override;

 private:
  class no_debugger_messenger final : public xeus::xcontrol_messenger {
    nl::json send_to_shell_impl(const nl::json& message) override;
  };

  xeus::xcontrol_messenger& get_control_messenger_impl() override;
  void send_shell_impl(xeus::xmessage message) override;
  void send_control_impl(xeus::xmessage message) override;
  // The thread asking for input: sends the input request, then waits for its
  // reply and hands it to the stdin listener. Throws input_interrupted if
  // an interrupt ends the main thread's wait, std::runtime_error if the
  // kernel stops.
  void send_stdin_impl(xeus::xmessage message) override;
  void publish_impl(xeus::xpub_message message, xeus::channel c) override;
  void start_impl(xeus::xpub_message message) override;
  void abort_queue_impl(const listener& l, long polling_interval) override;
  void stop_impl() override;
  void update_config_impl(xeus::xkernel_configuration& config) const override;

  void run_shell_loop();
  // Main thread: until a request, a task or a stop may be there.
  void wait_for_shell();
  // Main thread: runs the tasks posted so far.
  void run_main_tasks();
  std::optional<xeus::xmessage> next_main_request();
  // Any thread: `task` runs on the main thread between two requests.
  void post_to_main(std::function<void()> task);
  // Shell router thread: routes requests while the main thread is busy.
  void run_shell_router_loop();
  // Any thread: reads every request waiting on the shell socket, and routes
  // each (route_shell_request). Reading also re-arms the socket's
  // descriptor, which signals a change, not a message.
  void read_shell_requests();
  // Checks one request and queues it where it runs.
  void route_shell_request(const frame_list& frames);
  // The main thread starts (true) or ends (false) a request or a task.
  void set_main_busy(bool busy);
  void run_control_loop();
  void run_io_loop();
  frame_list welcome_frames(const zmq::message_t& subscription) const;
  void stop_threads() noexcept;

  // Parses, checks and delivers one message from a request socket; on the
  // shell channel, to `deliver` (the shell listener, or abort_queue's).
  void handle_request(const frame_list& frames, xeus::channel c, const listener& deliver);
  // Hands a checked request to `deliver`, logging what escapes it.
  void deliver_checked(xeus::xmessage request, xeus::channel c, const listener& deliver);
  void reject(const xeus::xmessage& request, const std::string& problem, xeus::channel c,
              const char* ename = "BadRequest");
  xeus::xpub_message status_message(const nl::json& parent, const char* state) const;
  void queue_for_iopub(frame_list frames);

  message_signer m_signer;
  nl::json::error_handler_t m_error_handler;
  int m_input_cancel_fd;
  idle_waiter m_wait_while_idle;
  subshells* p_subshells;
  no_debugger_messenger m_messenger;

  zmq::socket_t m_shell;
  std::mutex m_stdin_mutex;  // held by the thread asking for input
  std::thread::id m_main_thread;  // the one running start()
  zmq::socket_t m_stdin;
  zmq::socket_t m_control;
  zmq::socket_t m_iopub;
  zmq::socket_t m_heartbeat;

  // Who our own messages (rejections, the IOPub welcome) are from: xeus's
  // kernel core, as its start message says.
  std::string m_status_topic;
  std::string m_user_name;
  std::string m_session;

  std::atomic<bool> m_stopping{false};
  wake_pipe m_shell_wake;
  wake_pipe m_control_wake;
  wake_pipe m_io_wake;

  // The main shell's requests, from whichever thread read them, and tasks,
  // from any thread; m_inbox_wake is readable while some may be there.
  std::mutex m_inbox_mutex;
  std::deque<xeus::xmessage> m_main_requests;         // guarded by m_inbox_mutex
  std::deque<std::function<void()>> m_main_tasks;     // guarded by m_inbox_mutex
  wake_pipe m_inbox_wake;

  // The shell socket's users: the sender of each reply, the reader of
  // requests. m_shell_fd is zmq's descriptor for it, readable when the
  // socket's state changed (a request may be there).
  std::mutex m_shell_mutex;
  bool m_shell_closed = false;  // guarded by m_shell_mutex
  // Held by the reader of requests from the socket until it has routed
  // them: requests then reach the queues in the order they arrived, though
  // two threads read (read_shell_requests). Taken before m_shell_mutex.
  std::mutex m_shell_read_mutex;
  int m_shell_fd = -1;
  // Whether the main thread handles a request or a task; the shell router
  // thread watches the socket only then. m_router_wake: look again.
  std::atomic<bool> m_main_busy{false};
  bool m_router_stopping = false;  // guarded by m_shell_mutex
  wake_pipe m_router_wake;

  std::mutex m_outbox_mutex;
  std::deque<frame_list> m_outbox;  // guarded by m_outbox_mutex
  bool m_io_stopping = false;       // guarded by m_outbox_mutex

  std::thread m_shell_router_thread;
  std::thread m_control_thread;
  std::thread m_io_thread;
};

// The xkernel server builder for a kernel whose input requests end when
// input_cancel_fd becomes readable, that waits for requests in
// wait_while_idle, and whose subshells are `subshell_queues` (nullptr: none).
xeus::xkernel::server_builder make_kernel_server_builder(int input_cancel_fd,
                                                         idle_waiter wait_while_idle,
                                                         subshells* subshell_queues);

}  // namespace interp_rpc::kernel
