// The shell channel as ipykernel serves it, where xeus serves it otherwise.
//
// A server decorator placed between the transport and xeus's kernel core. It
// sees every shell request before the core does and every reply and IOPub
// message after, and changes four things:
//
// - The request in hand. The interpreter learns of each request before it is
//   handled (see interpreter::begin_request): its output, get_parent() and
//   the cell id follow it, not the last execute request.
// - stop_on_error. It defaults to true (xeus says false). After a non-silent
//   execute request fails, the execute requests already queued are answered
//   `status: "aborted"`, each between a busy and an idle status, at once;
//   every other queued request is handled normally. This happens before the
//   failed request's idle status, so that a request sent after it runs.
//   (xeus answers every queued
//   message, whatever its type, `status: "error"` with no status around it,
//   waiting 50 ms after each one.)
// - Comm requests. They are dispatched holding the GIL, which guards xeus's
//   comm registry (see comm.hpp).
// - Execution counts. IPython's count is the truth: execute_input carries the
//   number the cell will get, execute_reply the shell's count minus one, as
//   with ipykernel, so a store_history=False request uses no number. (xeus
//   counts every non-silent request.)
//
// - Requests the core does not know. xeus's core ignores them with a log
//   line, and a client waiting for the reply waits forever. This layer
//   answers usage_request (usage_report.hpp) and connect_request as
//   ipykernel does, on either channel, and any other unknown type with an
//   error reply naming it (ipykernel logs and ignores it).
//
// - Subshells. It answers create_subshell_request, delete_subshell_request and
//   list_subshell_request on the control channel as ipykernel 7 does, and
//   handles the requests of each subshell on that subshell's thread, exactly
//   as the main shell's, with that request as the parent of the thread's
//   output. stop_on_error aborts the execute requests queued on the same
//   subshell only.
//
// It also gives the interpreter a way to publish any IOPub message (for
// get_ipython().kernel.session, see kernel_object.hpp).
#pragma once

#include <memory>
#include <string>
#include <thread>

#include <xeus/xkernel.hpp>
#include <xeus/xserver.hpp>

#include "kernel/subshells.hpp"
#include "kernel/usage_report.hpp"

namespace interp_rpc::kernel {

class interpreter;

class shell_protocol final : public xeus::xserver {
 public:
  // ports: connect_request's answer, {"shell_port": ..., ...}.
  shell_protocol(std::unique_ptr<xeus::xserver> inner, interpreter& interpreter,
                 subshells& subshell_queues, nl::json ports);

 private:
  xeus::xcontrol_messenger& get_control_messenger_impl() override;
  void send_shell_impl(xeus::xmessage message) override;
  void send_control_impl(xeus::xmessage message) override;
  void send_stdin_impl(xeus::xmessage message) override;
  void publish_impl(xeus::xpub_message message, xeus::channel c) override;
  void start_impl(xeus::xpub_message message) override;
  void abort_queue_impl(const listener& l, long polling_interval) override;
  void stop_impl() override;
  void update_config_impl(xeus::xkernel_configuration& config) const override;

  // Main thread or a subshell's: a request from the shell socket.
  void handle(xeus::xmessage request);
  // A subshell's thread: a request for it.
  void handle_in_subshell(xeus::xmessage request);
  // Control thread: answers the subshell requests; false for the others.
  bool answer_if_subshell_request(const xeus::xmessage& request);
  void handle_execute(xeus::xmessage request);
  // Answers every execute request already waiting for this thread's shell
  // (the main one, or a subshell), "aborted".
  void abort_queued_executes();
  void abort(const xeus::xmessage& request);
  void publish_status(const nl::json& parent, const std::string& state);
  // Main or control thread: answers a request the core has no handler for,
  // between busy and idle statuses; returns false for the others.
  bool answer_if_unknown_to_core(const xeus::xmessage& request, xeus::channel channel);
  std::string topic(const std::string& msg_type) const;

  std::unique_ptr<xeus::xserver> p_inner;
  interpreter& m_interpreter;
  subshells& m_subshells;
  // From the kernel's first message: what our own messages are signed as.
  std::string m_status_topic;
  std::string m_user_name;
  std::string m_session;
  const std::thread::id m_main_thread;  // which runs the shell (it builds the server)
  const nl::json m_ports;
  usage_report m_usage;
};

// The server builder `inner`, wrapped in shell_protocol.
xeus::xkernel::server_builder with_shell_protocol(xeus::xkernel::server_builder inner,
                                                  interpreter& interpreter,
                                                  subshells& subshell_queues);

}  // namespace interp_rpc::kernel
