// The interpreter's requests, output and shutdown; its startup is in
// interpreter_startup.cpp.
#include "kernel/interpreter.hpp"

#include <exception>
#include <iostream>
#include <optional>
#include <span>
#include <utility>

#include <pybind11/stl.h>
#include <pybind11_json/pybind11_json.hpp>
#include <xeus/xhelper.hpp>

#include "kernel/child_processes.hpp"
#include "kernel/input.hpp"
#include "kernel/iopub_backlog.hpp"
#include "kernel/kernel_object.hpp"
#include "kernel/live_view.hpp"
#include "kernel/workers_feed.hpp"
#include "kernel/message_json.hpp"

namespace py = pybind11;
using namespace pybind11::literals;

namespace interp_rpc::kernel {

namespace {

struct python_error {
  std::string ename;
  std::string evalue;
  std::vector<std::string> traceback;
};

std::string type_name(const py::handle& type) {
  return py::str(type.attr("__name__")).cast<std::string>();
}

nl::json error_reply(const py::error_already_set& e) {
  return xeus::create_error_reply(type_name(e.type()), to_utf8(py::str(e.value())));
}

// The traceback of the last error IPython showed on this thread: the main
// shell and each subshell run cells at once.
thread_local std::vector<std::string> t_last_traceback;

// The request a subshell's thread handles, as a whole message (get_parent()).
thread_local nl::json t_subshell_request;

// The error that ended a cell, if run_cell says it failed.
std::optional<python_error> cell_error(const py::object& result) {
  py::object exception = result.attr("error_before_exec");
  if (exception.is_none()) {
    exception = result.attr("error_in_exec");
  }
  if (exception.is_none()) {
    return std::nullopt;
  }
  return python_error{type_name(py::type::handle_of(exception)), to_utf8(py::str(exception)),
                      t_last_traceback};
}

// The execute reply of a cell that has run, with IPython's payload.
nl::json cell_reply(const py::object& shell, const std::optional<python_error>& error,
                    const nl::json& user_expressions) {
  const py::object payload_manager = shell.attr("payload_manager");
  const nl::json payload = to_message_json(payload_manager.attr("read_payload")(), "payload");
  payload_manager.attr("clear_payload")();
  if (error) {
    nl::json reply = xeus::create_error_reply(error->ename, error->evalue, error->traceback);
    reply["payload"] = payload;
    reply["user_expressions"] = nl::json::object();
    return reply;
  }
  const py::object results = shell.attr("user_expressions")(pyjson::from_json(user_expressions));
  return xeus::create_successful_reply(payload, to_message_json(results, "user_expressions"));
}

}  // namespace

interpreter::interpreter(std::string connection_file)
    : m_comms(*this), m_connection_file(std::move(connection_file)) {
  xeus::register_interpreter(this);
}

interpreter::~interpreter() = default;

/**** requests ****/

void interpreter::execute_request_impl(send_reply_callback cb, int,
                                       const std::string& code,
                                       xeus::execute_request_config config,
                                       nl::json user_expressions) {
  nl::json reply;
  // The interrupter knows this request runs since the shell took it
  // (shell_protocol::handle_execute): a Ctrl-C while this waits for the GIL
  // (IPython's import may hold it a while) is this cell's.
  try {
    py::gil_scoped_acquire gil;
    reply = execute(code, config, user_expressions);
  } catch (const std::exception& e) {
    // Not a Python error (those are the cell's): the kernel itself failed.
    reply = xeus::create_error_reply("KernelError", e.what());
  }
  // Without the GIL: sending the reply needs no Python.
  cb(std::move(reply));
}

nl::json interpreter::execute(const std::string& code, const xeus::execute_request_config& config,
                              const nl::json& user_expressions) {
  if (!on_main_thread()) {
    return execute_in_subshell(code, config, user_expressions);
  }
  try {
    shell();
  } catch (py::error_already_set& e) {
    // The cell never ran. Stopping: its answer is "aborted", as for the
    // requests a failed cell leaves queued. Otherwise (an interrupt while
    // IPython was being imported, or IPython failing to start) an error, shown
    // as the cell's output since it has no traceback to show it.
    if (m_interrupter.stopping()) {
      return nl::json{{"status", "aborted"}};
    }
    const std::string ename = type_name(e.type());
    const std::string evalue = to_utf8(py::str(e.value()));
    const std::vector<std::string> traceback{ename + ": " + evalue};
    // Silent or not, as ipykernel: an error is always shown.
    publish_execution_error(ename, evalue, traceback);
    return xeus::create_error_reply(ename, evalue, traceback);
  }
  m_comms.collect_closed();
  t_last_traceback.clear();
  // As ipykernel: the cell failed if run_cell says so, whatever it showed (a
  // cell may show a traceback it handled, as ipywidgets' Output and %tb do).
  std::optional<python_error> error;
  try {
    input_redirection input(*this, config.allow_stdin);
    interrupter::request_guard interruptible(m_interrupter);
    py::dict options("store_history"_a = config.store_history, "silent"_a = config.silent);
    if (!m_cell_id.empty()) {
      options["cell_id"] = m_cell_id;
    }
    error = cell_error(m_event_loop.attr("run_cell")(m_shell, code, **options));
  } catch (py::error_already_set& e) {
    // IPython itself failed (or was interrupted outside the user's code).
    report(e);
    error = python_error{type_name(e.type()), to_utf8(py::str(e.value())),
                         t_last_traceback};
  }
  p_sigint_relay->restore();
  m_execution_count = m_shell.attr("execution_count").cast<int>();
  flush_streams();
  return cell_reply(m_shell, error, user_expressions);
}

nl::json interpreter::execute_in_subshell(const std::string& code,
                                          const xeus::execute_request_config& config,
                                          const nl::json& user_expressions) {
  if (!m_shell_started) {
    // The main thread could not start IPython (an interrupt, a stop, or
    // IPython failing): shown, as the main shell shows it.
    const std::string evalue = "the kernel's IPython shell has not started";
    const std::vector<std::string> traceback{"RuntimeError: " + evalue};
    publish_execution_error("RuntimeError", evalue, traceback);
    return xeus::create_error_reply("RuntimeError", evalue, traceback);
  }
  t_last_traceback.clear();
  // As ipykernel: no interrupt reaches a subshell (signals go to the main
  // thread); its input() prompts go with its request as parent.
  std::optional<python_error> error;
  try {
    input_redirection input(*this, config.allow_stdin);
    py::dict options("store_history"_a = config.store_history, "silent"_a = config.silent);
    const nl::json metadata = t_subshell_request.is_object()
                                  ? t_subshell_request.value("metadata", nl::json::object())
                                  : nl::json::object();
    const auto cell_id = metadata.find("cellId");
    if (cell_id != metadata.end() && cell_id->is_string()) {
      options["cell_id"] = cell_id->get<std::string>();
    }
    error = cell_error(py::module_::import("interp_rpc_kernel.subshell_loop")
                           .attr("run_cell")(m_shell, code, **options));
  } catch (py::error_already_set& e) {
    report(e);
    error = python_error{type_name(e.type()), to_utf8(py::str(e.value())), t_last_traceback};
  }
  m_execution_count = m_shell.attr("execution_count").cast<int>();
  flush_streams();
  return cell_reply(m_shell, error, user_expressions);
}

bool interpreter::wait_while_idle(std::span<const int> fds) {
  if (m_detached) {
    return false;
  }
  py::gil_scoped_acquire gil;
  if (!m_event_loop) {
    return false;
  }
  try {
    m_event_loop.attr("wait_while_idle")(py::cast(std::vector<int>(fds.begin(), fds.end())));
  } catch (py::error_already_set& e) {
    // Raised by a task while the kernel was idle (sys.exit() in one): the
    // kernel goes on, as ipykernel's loop does, and says so on its stderr.
    e.discard_as_unraisable("a task of the kernel's event loop");
  }
  flush_streams();
  return true;
}

void interpreter::show_traceback(const py::handle& etype, const py::handle& evalue,
                                 const py::handle& traceback) {
  flush_streams();
  t_last_traceback.clear();
  for (const py::handle line : traceback) {
    t_last_traceback.push_back(to_utf8(py::str(line)));
  }
  // Also for a silent request, as ipykernel: silent means no execute_input,
  // no result and no history, not a hidden error.
  publish_execution_error(type_name(etype), to_utf8(py::str(evalue)), t_last_traceback);
}

void interpreter::report(py::error_already_set& error) {
  try {
    m_shell.attr("showtraceback")(py::make_tuple(error.type(), error.value(), error.trace()));
  } catch (py::error_already_set&) {
    // IPython could not format it: show the bare exception.
    const std::string ename = type_name(error.type());
    const std::string evalue = to_utf8(py::str(error.value()));
    show_traceback(error.type(), error.value(), py::cast(std::vector<std::string>{ename + ": " + evalue}));
  }
}

nl::json interpreter::complete_request_impl(const std::string& code, int cursor_pos) {
  py::gil_scoped_acquire gil;
  try {
    // (matches, start, end, metadata), as ipykernel's reply has them.
    const py::tuple completion = shell().attr("complete_code")(code, cursor_pos);
    return xeus::create_complete_reply(pyjson::to_json(completion[0]), completion[1].cast<int>(),
                                       completion[2].cast<int>(), pyjson::to_json(completion[3]));
  } catch (py::error_already_set& e) {
    return error_reply(e);
  }
}

nl::json interpreter::inspect_request_impl(const std::string& code, int cursor_pos,
                                           int detail_level) {
  py::gil_scoped_acquire gil;
  try {
    const py::object name = py::module_::import("IPython.utils.tokenutil")
                                .attr("token_at_cursor")(code, cursor_pos);
    const py::object bundle =
        shell().attr("object_inspect_mime")(name, "detail_level"_a = detail_level);
    return xeus::create_inspect_reply(true, to_message_json(bundle, "data"));
  } catch (py::error_already_set& e) {
    if (e.matches(PyExc_KeyError)) {
      return xeus::create_inspect_reply(false);  // no such name
    }
    return error_reply(e);
  }
}

nl::json interpreter::is_complete_request_impl(const std::string& code) {
  py::gil_scoped_acquire gil;
  try {
    const py::tuple answer =
        shell().attr("input_transformer_manager").attr("check_complete")(code);
    const std::string status = answer[0].cast<std::string>();
    const std::string indent = answer[1].is_none() ? "" : std::string(answer[1].cast<int>(), ' ');
    return xeus::create_is_complete_reply(status, indent);
  } catch (py::error_already_set& e) {
    return error_reply(e);
  }
}

nl::json interpreter::kernel_info_request_impl() {
  // ipykernel's seven, at their current addresses.
  const nl::json help_links = nl::json::array(
      {{{"text", "Python Reference"}, {"url", "https://docs.python.org/3.14/"}},
       {{"text", "IPython Reference"}, {"url", "https://ipython.readthedocs.io/en/stable/"}},
       {{"text", "NumPy Reference"}, {"url", "https://numpy.org/doc/stable/reference/"}},
       {{"text", "SciPy Reference"}, {"url", "https://docs.scipy.org/doc/scipy/reference/"}},
       {{"text", "Matplotlib Reference"}, {"url", "https://matplotlib.org/stable/"}},
       {{"text", "SymPy Reference"}, {"url", "https://docs.sympy.org/latest/index.html"}},
       {{"text", "pandas Reference"}, {"url", "https://pandas.pydata.org/docs/"}}});
  std::vector<std::string> features{"kernel subshells"};
  if (m_debugger_available) {
    features.emplace_back("debugger");
  }
  nl::json reply = xeus::create_info_reply(
      "interp-rpc", INTERP_RPC_VERSION, "python", m_python_version, "text/x-python", ".py",
      "ipython3", nl::json{{"name", "ipython"}, {"version", 3}}, "python", m_banner, help_links,
      features);
  // What frontends older than supported_features read.
  reply["debugger"] = m_debugger_available;
  return reply;
}

nl::json interpreter::shutdown_request_impl(bool restart) {
  // The server stops once the main thread is back in its loop: end the cell
  // it may be running, and those still queued.
  if (m_before_interrupt) {
    m_before_interrupt(true);
  }
  m_interrupter.stop();
  return xeus::create_shutdown_reply(restart);
}

nl::json interpreter::interrupt_request_impl() {
  if (m_before_interrupt) {
    m_before_interrupt(false);
  }
  m_interrupter.interrupt();
  interrupt_child_processes();
  return xeus::create_interrupt_reply();
}

/**** output ****/

void interpreter::begin_request(const xeus::xmessage& request) {
  const auto field = [](const nl::json& value) {
    return value.is_object() ? value : nl::json::object();
  };
  const nl::json header = field(request.header());
  const nl::json metadata = field(request.metadata());
  // As jupyter_client's Session deserializes it, which ipykernel returns.
  nl::json message = {{"header", header},
                      {"msg_id", header.value("msg_id", "")},
                      {"msg_type", header.value("msg_type", "")},
                      {"parent_header", field(request.parent_header())},
                      {"metadata", metadata},
                      {"content", field(request.content())},
                      {"buffers", nl::json::array()}};
  if (!on_main_thread()) {
    if (message["msg_type"] == "execute_request") {
      // Other threads' parent, as their output's (set_request_context).
      std::lock_guard lock(m_execute_message_mutex);
      m_execute_message = message;
    }
    t_subshell_request = std::move(message);
    return;
  }
  m_parent.exchange_main(xeus::xrequest_context(header, request.identities()));
  if (!m_sigint_unblocked) {
    // The server's threads run by now, with SIGINT blocked; the main thread
    // and the threads and processes the cells start get it unblocked
    // (interrupter.hpp).
    unblock_sigint_in_this_thread();
    m_sigint_unblocked = true;
  }
  if (message["msg_type"] == "execute_request") {
    const auto cell_id = metadata.find("cellId");
    m_cell_id = cell_id != metadata.end() && cell_id->is_string() ? cell_id->get<std::string>() : "";
    std::lock_guard lock(m_execute_message_mutex);
    m_execute_message = message;
  }
  m_request_message = std::move(message);
}

void interpreter::set_iopub_publisher(iopub_publisher publisher, std::string user_name,
                                      std::string session_id) {
  m_iopub_publisher = std::move(publisher);
  m_user_name = std::move(user_name);
  m_session_id = std::move(session_id);
}

nl::json interpreter::publish_iopub(const std::string& msg_type, nl::json parent_header,
                                    nl::json metadata, nl::json content,
                                    xeus::buffer_sequence buffers) {
  if (!m_iopub_publisher) {
    throw std::runtime_error("the kernel has not started");
  }
  flush_streams();
  return m_iopub_publisher(msg_type, std::move(parent_header), std::move(metadata),
                           std::move(content), std::move(buffers));
}

void interpreter::dispatch_comm_request(const std::function<void()>& dispatch) {
  py::gil_scoped_acquire gil;
  if (on_main_thread() && !m_shell_started && !m_detached) {
    // The targets the kernel registers as it starts (the interp_rpc
    // extension's Workers panel) exist once its shell has started. A comm
    // opened before the first cell, as JupyterLab opens one after a restart,
    // must find them.
    try {
      shell();
    } catch (py::error_already_set& e) {
      // An interrupt or a stop while IPython was imported: the request is
      // dispatched as it is, and the next one tries again.
      e.discard_as_unraisable("starting the shell for a comm request");
    }
  }
  if (!on_main_thread()) {
    // A subshell's comm request: on that subshell's own loop.
    py::module_::import("interp_rpc_kernel.subshell_loop")
        .attr("call_on_loop")(py::cpp_function(dispatch));
  } else if (m_event_loop) {
    // On the running loop, as ipykernel runs its handlers: a widget's
    // callback may start a task, or look for the loop.
    m_event_loop.attr("call_on_loop")(py::cpp_function(dispatch));
  } else {
    dispatch();
  }
  m_comms.after_dispatch();
}

nl::json interpreter::parent_message() const {
  if (on_main_thread()) {
    return m_request_message;
  }
  if (!t_subshell_request.is_null()) {
    return t_subshell_request;
  }
  std::lock_guard lock(m_execute_message_mutex);
  return m_execute_message;
}

void interpreter::set_parent(nl::json message, std::vector<std::string> identities) {
  const nl::json header = message.value("header", nl::json::object());
  if (!header.is_object()) {
    throw py::value_error("set_parent takes a whole message, with a header");
  }
  flush_streams();  // what was written so far keeps its request
  xeus::xrequest_context context(header, std::move(identities));
  if (header.value("msg_type", "") == "execute_request") {
    m_parent.set_execute_request(context);
    std::lock_guard lock(m_execute_message_mutex);
    m_execute_message = message;
  }
  if (on_main_thread()) {
    m_parent.exchange_main(std::move(context));
    m_request_message = std::move(message);
  }
}

py::object interpreter::io_loop() const {
  return m_event_loop ? py::object(m_event_loop.attr("io_loop")) : py::object(py::none());
}

void interpreter::set_request_context(xeus::xrequest_context context) {
  // A subshell's execute request: its thread's output is pinned to it
  // already; other threads' output now goes to it, as to a main shell's.
  if (on_main_thread()) {
    m_parent.set_execute_request(std::move(context));
  } else {
    m_parent.set_latest_execute_request(std::move(context));
  }
}

const xeus::xrequest_context& interpreter::get_request_context() const noexcept {
  return m_parent.current();
}

void interpreter::flush_streams() {
  if (p_stdout != nullptr) {
    p_stdout->flush();
  }
  if (p_stderr != nullptr) {
    p_stderr->flush();
  }
}

void interpreter::wait_for_iopub_room() {
  iopub_backlog& backlog = iopub_backlog::shared();
  if (backlog.has_room()) {
    return;
  }
  if (!on_main_thread()) {
    backlog.wait_for_room(-1);
    return;
  }
  bool room = false;
  {
    const interrupter::cancellable_wait waiting(m_interrupter);
    room = backlog.wait_for_room(m_interrupter.cancel_fd());
  }
  // Ended by an interrupt: it tripped Python's handler if the user's code
  // runs, and the KeyboardInterrupt is raised here.
  if (!room && PyGILState_Check() != 0 && PyErr_CheckSignals() != 0) {
    throw py::error_already_set();
  }
}

/**** shutdown ****/

void interpreter::detach_from_kernel() {
  if (m_detached) {
    return;
  }
  m_detached = true;
  // Cancels IPython's import if it still runs (see start_import).
  m_interrupter.stop();
  py::gil_scoped_acquire gil;
  stop_live_views();  // they publish through this interpreter
  stop_workers_feeds();  // so do they
  if (m_loader) {
    m_loader.attr("join")();  // Python must not finalize in the middle of an import
  }
  if (m_shell) {
    flush_streams();
    // They stay sys.stdout and sys.stderr, writing to the descriptors (see
    // stream::detach): threads may still print while Python finalizes.
    // Either is missing if its thread could not start with the shell.
    for (stream* s : {p_stdout, p_stderr}) {
      if (s != nullptr) {
        s->detach();
      }
    }
    py::object display_pub = m_shell.attr("display_pub");
    display_pub.attr("send_display_data") = py::none();
    display_pub.attr("send_clear_output") = py::none();
    m_shell.attr("displayhook").attr("send_execute_result") = py::none();
    py::delattr(m_shell, "_showtraceback");
    py::delattr(m_shell, "showtraceback");
    py::delattr(m_shell, "run_code");
    py::delattr(m_shell, "ask_exit");
    py::delattr(m_shell, "set_next_input");
    m_shell.attr("kernel") = py::none();
  }
  if (m_kernel_object) {
    detach_kernel_object(m_kernel_object);
  }
  m_comms.detach();
}

}  // namespace interp_rpc::kernel