#include "kernel/shell_protocol.hpp"

#include <limits>
#include <optional>
#include <set>
#include <utility>

#include <xeus/xhelper.hpp>

#include "kernel/interpreter.hpp"
#include "kernel/output_parent.hpp"
#include "kernel/request_check.hpp"

namespace interp_rpc::kernel {

namespace {

// What the stop_on_error field of an execute request means when absent
// (Jupyter messaging protocol, execute request).
constexpr bool default_stop_on_error = true;

// The execute request the calling thread handles: each shell (the main one,
// each subshell) has its own, and aborts its own queue.
struct execute_state {
  std::string msg_id;
  bool stop_on_error = false;  // and not silent
  bool abort_pending = false;  // it failed: abort before its idle status
};
thread_local execute_state t_execute;

std::string message_type(const xeus::xmessage_base& message) {
  return message.header().value("msg_type", "");
}

// A history_request with ipykernel's defaults where xeus's differ: a range
// starts at line 0 and, without a stop, runs to the end; a search without n
// returns every match. (xeus takes 1, 10 and 10.) IPython's queries read the
// largest int as "no limit".
nl::json with_ipykernel_history_defaults(nl::json content) {
  constexpr int no_limit = std::numeric_limits<int>::max();
  if (!content.is_object()) {
    return content;
  }
  const std::string access = content.value("hist_access_type", "");
  if (access == "range") {
    if (!content.contains("start")) {
      content["start"] = 0;
    }
    if (!content.contains("stop")) {
      content["stop"] = no_limit;
    }
  } else if (access == "search" && !content.contains("n")) {
    content["n"] = no_limit;
  }
  return content;
}

// The request types xeus 6's kernel core has a handler for (xkernel_core's
// constructor).
bool core_handles(const std::string& type) {
  static const std::set<std::string> handled{
      "execute_request",   "complete_request",   "inspect_request",  "history_request",
      "is_complete_request", "comm_info_request", "comm_open",        "comm_close",
      "comm_msg",          "kernel_info_request", "shutdown_request", "interrupt_request",
      "debug_request"};
  return handled.contains(type);
}

}  // namespace

shell_protocol::shell_protocol(std::unique_ptr<xeus::xserver> inner, interpreter& interpreter,
                               subshells& subshell_queues, nl::json ports)
    : p_inner(std::move(inner)),
      m_interpreter(interpreter),
      m_subshells(subshell_queues),
      m_main_thread(std::this_thread::get_id()),
      m_ports(std::move(ports)) {
  p_inner->register_shell_listener([this](xeus::xmessage msg) { handle(std::move(msg)); });
  m_subshells.set_handler([this](xeus::xmessage msg) { handle_in_subshell(std::move(msg)); });
  p_inner->register_control_listener([this](xeus::xmessage msg) {
    if (!answer_if_subshell_request(msg) &&
        !answer_if_unknown_to_core(msg, xeus::channel::CONTROL)) {
      notify_control_listener(std::move(msg));
    }
  });
  p_inner->register_stdin_listener(
      [this](xeus::xmessage msg) { notify_stdin_listener(std::move(msg)); });
  p_inner->register_internal_listener(
      [this](nl::json msg) { return notify_internal_listener(std::move(msg)); });
}

void shell_protocol::handle(xeus::xmessage request) {
  m_interpreter.begin_request(request);
  const std::string type = message_type(request);
  if (answer_if_unknown_to_core(request, xeus::channel::SHELL)) {
    return;
  }
  if (type == "execute_request") {
    handle_execute(std::move(request));
  } else if (type == "history_request") {
    nl::json content = with_ipykernel_history_defaults(request.content());
    notify_shell_listener(xeus::xmessage(request.identities(), request.header(),
                                         request.parent_header(), request.metadata(),
                                         std::move(content), std::move(request).buffers()));
  } else if (type == "comm_open" || type == "comm_msg" || type == "comm_close" ||
             type == "comm_info_request") {
    m_interpreter.dispatch_comm_request(
        [this, &request] { notify_shell_listener(std::move(request)); });
  } else {
    notify_shell_listener(std::move(request));
  }
}

void shell_protocol::handle_in_subshell(xeus::xmessage request) {
  if (!m_interpreter.shell_started()) {
    // Only the main thread starts IPython: it does so between two of its
    // own requests, while this request waits.
    m_subshells.run_on_main([this] { m_interpreter.start_shell_on_main(); },
                            [this] { return m_interpreter.shell_started(); });
  }
  const thread_parent output_goes_to_request(
      xeus::xrequest_context(request.header(), request.identities()));
  handle(std::move(request));
}

bool shell_protocol::answer_if_subshell_request(const xeus::xmessage& request) {
  const std::string type = message_type(request);
  nl::json content;
  if (type == "create_subshell_request") {
    try {
      content = {{"status", "ok"}, {"subshell_id", m_subshells.create()}};
    } catch (const std::exception& e) {
      content = xeus::create_error_reply("RuntimeError", e.what());
    }
  } else if (type == "list_subshell_request") {
    content = {{"status", "ok"}, {"subshell_id", m_subshells.list()}};
  } else if (type == "delete_subshell_request") {
    const nl::json& request_content = request.content();
    const auto id = request_content.find("subshell_id");
    if (id == request_content.end() || !id->is_string()) {
      content = xeus::create_error_reply(
          "BadRequest", "delete_subshell_request needs content.subshell_id, a string");
    } else if (m_subshells.remove(id->get<std::string>())) {
      content = {{"status", "ok"}};
    } else {
      // ipykernel's error is the KeyError of its table of subshells.
      content = xeus::create_error_reply(
          "KeyError", "no subshell has the id '" + id->get<std::string>() + "'");
    }
  } else {
    return false;
  }
  publish_status(request.header(), "busy");
  send_control(xeus::xmessage(request.identities(),
                              xeus::make_header(reply_type(type), m_user_name, m_session),
                              request.header(), nl::json::object(), std::move(content),
                              xeus::buffer_sequence()));
  publish_status(request.header(), "idle");
  return true;
}

void shell_protocol::handle_execute(xeus::xmessage request) {
  const nl::json& content = request.content();
  const bool silent = content.is_object() && content.value("silent", false);
  bool stop_on_error = default_stop_on_error;
  if (content.is_object() && content.contains("stop_on_error") &&
      content["stop_on_error"].is_boolean()) {
    stop_on_error = content["stop_on_error"].get<bool>();
  }
  // The core must not abort the queue itself: it would abort every type.
  nl::json core_content = content;
  if (core_content.is_object()) {
    core_content["stop_on_error"] = false;
  }
  xeus::xmessage for_core(request.identities(), request.header(), request.parent_header(),
                          request.metadata(), std::move(core_content),
                          std::move(request).buffers());
  t_execute = {for_core.header().value("msg_id", ""), stop_on_error && !silent, false};
  // From before the cell is announced (execute_input) until its reply: a
  // Ctrl-C that comes in between is this cell's (interrupter::execution).
  std::optional<interrupter::execution> interruptible;
  if (std::this_thread::get_id() == m_main_thread) {
    interruptible.emplace(m_interpreter.interrupts());
  }
  // The shell runs on this thread and the interpreter answers before it
  // returns: the reply, then the abort (publish_impl), then the idle status
  // have gone out when this returns.
  notify_shell_listener(std::move(for_core));
  t_execute = {};
  if (m_interpreter.exit_requested()) {
    // exit() in the cell, whose reply and idle status are out: the server
    // stops and the kernel ends, as after a shutdown request.
    stop();
  }
}

void shell_protocol::abort_queued_executes() {
  const bool on_main = std::this_thread::get_id() == m_main_thread;
  const auto abort_execute = [this, on_main](xeus::xmessage request) {
    if (message_type(request) == "execute_request") {
      m_interpreter.begin_request(request);
      abort(request);
    } else if (on_main) {
      handle(std::move(request));
    } else {
      // With its own output parent, not the failed request's.
      handle_in_subshell(std::move(request));
    }
  };
  if (!on_main) {
    m_subshells.take_queued(abort_execute);
    return;
  }
  // A polling interval of 0: what has arrived is aborted, at once; the first
  // request that arrives after the queue is empty runs.
  p_inner->abort_queue(abort_execute, 0);
}

void shell_protocol::abort(const xeus::xmessage& request) {
  publish_status(request.header(), "busy");
  const nl::json aborted = {{"status", "aborted"}};
  send_shell(xeus::xmessage(request.identities(),
                            xeus::make_header("execute_reply", m_user_name, m_session),
                            request.header(), aborted, aborted, xeus::buffer_sequence()));
  publish_status(request.header(), "idle");
}

bool shell_protocol::answer_if_unknown_to_core(const xeus::xmessage& request,
                                               xeus::channel channel) {
  const std::string type = message_type(request);
  if (core_handles(type)) {
    return false;
  }
  nl::json content;
  if (type == "usage_request") {
    content = m_usage.measure();
  } else if (type == "connect_request") {
    content = m_ports;
    content["status"] = "ok";
  } else {
    content = {{"status", "error"},
               {"ename", "UnknownRequest"},
               {"evalue", "the interp-rpc kernel does not know the request type '" + type + "'"},
               {"traceback", nl::json::array()}};
  }
  publish_status(request.header(), "busy");
  xeus::xmessage reply(request.identities(),
                       xeus::make_header(reply_type(type), m_user_name, m_session),
                       request.header(), nl::json::object(), std::move(content),
                       xeus::buffer_sequence());
  if (channel == xeus::channel::CONTROL) {
    send_control(std::move(reply));
  } else {
    send_shell(std::move(reply));
  }
  publish_status(request.header(), "idle");
  return true;
}

void shell_protocol::publish_status(const nl::json& parent, const std::string& state) {
  publish(xeus::xpub_message(m_status_topic, xeus::make_header("status", m_user_name, m_session),
                             parent, nl::json::object(), nl::json{{"execution_state", state}},
                             xeus::buffer_sequence()),
          xeus::channel::SHELL);
}

xeus::xcontrol_messenger& shell_protocol::get_control_messenger_impl() {
  return p_inner->get_control_messenger();
}

void shell_protocol::send_shell_impl(xeus::xmessage message) {
  if (message_type(message) == "execute_reply" && message.content().is_object()) {
    nl::json content = message.content();
    t_execute.abort_pending = t_execute.stop_on_error && content.value("status", "") == "error";
    if (content.contains("execution_count")) {
      content["execution_count"] = m_interpreter.execution_count() - 1;
    }
    message = xeus::xmessage(message.identities(), message.header(), message.parent_header(),
                             message.metadata(), std::move(content),
                             std::move(message).buffers());
  }
  p_inner->send_shell(std::move(message));
}

void shell_protocol::send_control_impl(xeus::xmessage message) {
  p_inner->send_control(std::move(message));
}

void shell_protocol::send_stdin_impl(xeus::xmessage message) {
  p_inner->send_stdin(std::move(message));
}

void shell_protocol::publish_impl(xeus::xpub_message message, xeus::channel c) {
  // The idle status of an execute request that failed: abort the queue
  // first, so that a client that waits for this idle before it sends its
  // next request never has that request aborted.
  if (t_execute.abort_pending && message_type(message) == "status" && message.parent_header().is_object() &&
      message.parent_header().value("msg_id", "") == t_execute.msg_id &&
      message.content().value("execution_state", "") == "idle") {
    t_execute.abort_pending = false;
    abort_queued_executes();
  }
  if (message_type(message) == "execute_input") {
    nl::json content = message.content();
    content["execution_count"] = m_interpreter.execution_count();
    message = xeus::xpub_message(message.topic(), message.header(), message.parent_header(),
                                 message.metadata(), std::move(content),
                                 std::move(message).buffers());
  }
  p_inner->publish(std::move(message), c);
}

void shell_protocol::start_impl(xeus::xpub_message message) {
  m_status_topic = message.topic();
  m_user_name = message.header().value("username", "");
  m_session = message.header().value("session", "");
  m_interpreter.set_iopub_publisher(
      [this](const std::string& msg_type, nl::json parent_header, nl::json metadata,
             nl::json content, xeus::buffer_sequence buffers) {
        nl::json header = xeus::make_header(msg_type, m_user_name, m_session);
        publish(xeus::xpub_message(topic(msg_type), header, std::move(parent_header),
                                   std::move(metadata), std::move(content), std::move(buffers)),
                xeus::channel::SHELL);
        return header;
      },
      m_user_name, m_session);
  p_inner->start(std::move(message));
}

std::string shell_protocol::topic(const std::string& msg_type) const {
  // xeus's topics read "kernel_core.<kernel id>.<msg_type>".
  const std::size_t last_dot = m_status_topic.rfind('.');
  return m_status_topic.substr(0, last_dot == std::string::npos ? 0 : last_dot + 1) + msg_type;
}

void shell_protocol::abort_queue_impl(const listener& l, long polling_interval) {
  p_inner->abort_queue(l, polling_interval);
}

void shell_protocol::stop_impl() { p_inner->stop(); }

void shell_protocol::update_config_impl(xeus::xkernel_configuration& config) const {
  p_inner->update_config(config);
}

xeus::xkernel::server_builder with_shell_protocol(xeus::xkernel::server_builder inner,
                                                  interpreter& interpreter,
                                                  subshells& subshell_queues) {
  return [inner = std::move(inner), &interpreter, &subshell_queues](xeus::xcontext& context,
                                                   const xeus::xconfiguration& config,
                                                   nl::json::error_handler_t eh) {
    nl::json ports = nl::json::object();
    if (const auto* kernel_config = std::get_if<xeus::xkernel_configuration>(&config)) {
      ports = {{"shell_port", std::stoi(kernel_config->m_shell_port)},
               {"iopub_port", std::stoi(kernel_config->m_iopub_port)},
               {"stdin_port", std::stoi(kernel_config->m_stdin_port)},
               {"control_port", std::stoi(kernel_config->m_control_port)},
               {"hb_port", std::stoi(kernel_config->m_hb_port)}};
    }
    return std::make_unique<shell_protocol>(inner(context, config, eh), interpreter,
                                            subshell_queues, std::move(ports));
  };
}

}  // namespace interp_rpc::kernel
