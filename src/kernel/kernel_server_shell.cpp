// kernel_server's shell channel: the thread that owns the shell socket and
// routes each request to the main thread's queue or a subshell's, and the
// main thread's side of that queue (see kernel_server.hpp).
#include <iostream>
#include <utility>
#include <variant>

#include "kernel/kernel_server.hpp"
#include "kernel/request_check.hpp"
#include "kernel/socket_io.hpp"

namespace interp_rpc::kernel {

void kernel_server::send_shell_impl(xeus::xmessage message) {
  frame_list frames = serialize_message(message, m_signer, m_error_handler);
  bool was_empty = false;
  {
    std::lock_guard lock(m_shell_outbox_mutex);
    was_empty = m_shell_outbox.empty();
    m_shell_outbox.push_back(std::move(frames));
  }
  if (was_empty) {
    m_shell_channel_wake.notify();
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
    run_main_tasks();
    if (m_stopping) {
      break;
    }
    // One request at a time, so that a stop between two is seen at once.
    if (std::optional<xeus::xmessage> request = next_main_request()) {
      deliver_checked(std::move(*request), xeus::channel::SHELL, deliver);
      continue;
    }
    wait_for_shell();
  }
}

void kernel_server::wait_for_shell() {
  const int fds[] = {m_inbox_wake.fd(), m_shell_wake.fd()};
  if (m_wait_while_idle && m_wait_while_idle(fds)) {
    // What woke it, or nothing (an early return): the caller looks, and
    // comes back.
    return;
  }
  zmq::pollitem_t items[] = {{nullptr, fds[0], ZMQ_POLLIN, 0}, {nullptr, fds[1], ZMQ_POLLIN, 0}};
  poll(items, 2);
}

void kernel_server::run_main_tasks() {
  std::deque<std::function<void()>> tasks;
  {
    std::lock_guard lock(m_inbox_mutex);
    tasks.swap(m_main_tasks);
  }
  for (std::function<void()>& task : tasks) {
    task();
  }
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

void kernel_server::run_shell_channel_loop() {
  zmq::pollitem_t items[] = {{m_shell.handle(), 0, ZMQ_POLLIN, 0},
                             {nullptr, m_shell_channel_wake.fd(), ZMQ_POLLIN, 0}};
  frame_list frames;
  while (true) {
    // Once stopping, only the wake: the requests left on the socket would
    // keep it readable.
    if (m_stopping) {
      poll(&items[1], 1);
    } else {
      poll(items, 2);
    }
    if (readable(items[1])) {
      m_shell_channel_wake.drain();
    }
    send_queued_replies();
    {
      std::lock_guard lock(m_shell_outbox_mutex);
      if (m_shell_channel_stopping && m_shell_outbox.empty()) {
        return;
      }
    }
    // Once stopping, requests still on the socket are not read.
    while (!m_stopping && receive_frames(m_shell, frames)) {
      route_shell_request(frames);
    }
  }
}

void kernel_server::send_queued_replies() {
  std::deque<frame_list> replies;
  {
    std::lock_guard lock(m_shell_outbox_mutex);
    replies.swap(m_shell_outbox);
  }
  for (frame_list& reply : replies) {
    send_frames(m_shell, reply);
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
    m_inbox_wake.notify();
  } catch (const std::exception& e) {
    std::cerr << "interp-rpc-kernel: error while routing a shell request: " << e.what()
              << std::endl;
  }
}

void kernel_server::abort_queue_impl(const listener& l, long polling_interval) {
  while (std::optional<xeus::xmessage> request = next_main_request()) {
    deliver_checked(std::move(*request), xeus::channel::SHELL, l);
    if (polling_interval > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(polling_interval));
    }
  }
}

}  // namespace interp_rpc::kernel
