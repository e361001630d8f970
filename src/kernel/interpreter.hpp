// The xeus interpreter of the "Python (interp-rpc)" kernel: cells run in the
// embedded CPython, in IPython's InteractiveShell (magics, display, history,
// completion, introspection), through the kernel's own subclass of it
// (interp_rpc_kernel/shell.py).
//
// Threads. xeus calls the request handlers on the main thread, which is also
// CPython's main thread (signals, hence KeyboardInterrupt, are delivered
// there); interrupt and shutdown arrive on the control thread. Between
// requests the main thread runs the asyncio loop cells run on
// (interp_rpc_kernel/event_loop.py), and holds the GIL only while the loop
// runs Python, so Python threads started by cells keep running too.
//
// Output from any thread. Any thread may publish, with or without the GIL:
// Python code through print and display, C++ code (the pool's status
// publisher) through xeus::get_interpreter()'s publish_stream, display_data,
// update_display_data... The message goes to IOPub through kernel_server,
// with the parent chosen by output_parent.
//
// Startup. configure() leaves IPython's import to a thread, so that the kernel
// answers kernel_info at once; shell() starts IPython on the first request
// that needs it. On a loaded machine the import takes seconds, and a
// shutdown must not wait for it (jupyter_client kills a kernel that has not
// exited 5 s after its shutdown request): a request waiting for the import
// ends on an interrupt or a stop, and a stop cancels the import itself.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <pybind11/pybind11.h>
#include <xeus/xinterpreter.hpp>

#include "kernel/comm.hpp"
#include "kernel/interrupter.hpp"
#include "kernel/output_parent.hpp"
#include "kernel/sigint_relay.hpp"
#include "kernel/stream.hpp"
#include "kernel/wake_pipe.hpp"

namespace interp_rpc::kernel {

class interpreter final : public xeus::xinterpreter {
 public:
  // The constructing thread is the main thread; it must hold the GIL.
  // connection_file: the file the kernel was started with, for %connect_info.
  explicit interpreter(std::string connection_file);
  ~interpreter() override;

  // Main thread, once the server has stopped and before the xeus kernel (and
  // its comm manager) is destroyed: Python gets its own stdout, stderr and
  // display hooks back, comms are closed, and every object we gave Python
  // turns inert, since Python outlives this interpreter (atexit handlers,
  // finalizers of user objects).
  void detach_from_kernel();

  // Before any shell request is handled (see shell_protocol): on the main
  // thread, the main thread's output goes to it; on any, get_parent()
  // returns it. (A subshell's thread pins its output itself.)
  void begin_request(const xeus::xmessage& request);

  // Publishes any message on IOPub (get_ipython().kernel.session.send).
  // publisher(msg_type, parent_header, metadata, content, buffers) returns the
  // header it made; shell_protocol provides it when the kernel starts.
  using iopub_publisher = std::function<nl::json(const std::string&, nl::json, nl::json, nl::json,
                                                 xeus::buffer_sequence)>;
  void set_iopub_publisher(iopub_publisher publisher, std::string user_name,
                           std::string session_id);
  nl::json publish_iopub(const std::string& msg_type, nl::json parent_header, nl::json metadata,
                         nl::json content, xeus::buffer_sequence buffers);
  const std::string& user_name() const noexcept { return m_user_name; }
  const std::string& session_id() const noexcept { return m_session_id; }

  // The request the calling thread's output belongs to, as a whole message
  // (get_parent()).
  nl::json parent_message() const;

  // Main thread: lets xeus dispatch a comm request (comm_open, comm_msg,
  // comm_close, comm_info_request) holding the GIL, which guards the comm
  // registry (see comm.hpp); then destroys the comms its handlers closed.
  void dispatch_comm_request(const std::function<void()>& dispatch);

  // get_ipython().kernel.set_parent: output of the calling thread goes to
  // `message` (a whole request), and get_parent() returns it; on the main
  // thread until the next request, on the others (when it is an execute
  // request) until the next execute request. Needs the GIL.
  void set_parent(nl::json message, std::vector<std::string> identities);

  // The event loop's KernelIOLoop, or None before the shell starts. GIL.
  pybind11::object io_loop() const;

  // Any thread: the number IPython gives the next cell that stores history.
  int execution_count() const noexcept { return m_execution_count.load(); }

  // Runs Python code for a request other than an execute request (a comm
  // message) the way a cell runs: with the GIL, output parented to that
  // request, interruptible, and a Python error shown as an error output.
  template <class F>
  void run_for_request(const xeus::xmessage& request, F&& f);

  // Publishes what the streams hold, so that what follows comes after it.
  // Needs the GIL.
  void flush_streams();

  // Any thread, holding no lock of the kernel's, after publishing: waits
  // while IOPub's backlog is full (see iopub_backlog), with the GIL
  // released. On the main thread an interrupt ends the wait and raises
  // KeyboardInterrupt (pybind11::error_already_set) in the user's code.
  void wait_for_iopub_room();

  // The IPython shell, started on first use. Main thread, with the GIL.
  // Raises (pybind11::error_already_set) if the kernel stops, or an
  // interrupt comes, while it waits for IPython's import: a
  // KeyboardInterrupt, or a RuntimeError once stopping.
  pybind11::object& shell();
  // Any thread: whether shell() has started IPython.
  bool shell_started() const noexcept { return m_shell_started.load(); }
  // Any thread but the main one, without the GIL: returns once the thread
  // that imports IPython at startup has finished (or a stop cancelled it).
  // A thread that imports meanwhile may be handed modules that the other
  // thread is still running: dataclasses reads a half-run `typing`.
  void wait_for_startup_import() const;
  // Main thread, without the GIL: starts the shell if it has not started
  // (for a subshell, whose thread cannot); an error is reported, not raised.
  void start_shell_on_main();

  // Main thread, without the GIL, between requests (kernel_server's idle
  // waiter): runs the asyncio loop until one of fds is readable. False if
  // there is no loop yet (the shell has not started).
  bool wait_while_idle(std::span<const int> fds);

  // Main thread: whether a cell called exit() or quit() (without
  // keep_kernel=True); the kernel then ends once that cell has its reply, as
  // ipykernel does, and the server restarts it.
  bool exit_requested() const noexcept { return m_exit_requested; }

  // Control thread: runs before an interrupt (false) or a stop (true)
  // reaches the cell. The debugger sets it, to let a cell that waits at a
  // breakpoint go first.
  using control_hook = std::function<void(bool stopping)>;
  void set_before_interrupt(control_hook hook) { m_before_interrupt = std::move(hook); }

  bool on_main_thread() const noexcept { return m_parent.on_main_thread(); }
  // The request the calling thread's output belongs to (see output_parent).
  const xeus::xrequest_context& current_request() const { return m_parent.current(); }
  interrupter& interrupts() noexcept { return m_interrupter; }

 private:
  void configure_impl() override;
  void execute_request_impl(send_reply_callback cb, int execution_counter,
                            const std::string& code, xeus::execute_request_config config,
                            nl::json user_expressions) override;
  nl::json complete_request_impl(const std::string& code, int cursor_pos) override;
  nl::json inspect_request_impl(const std::string& code, int cursor_pos,
                                int detail_level) override;
  nl::json is_complete_request_impl(const std::string& code) override;
  nl::json kernel_info_request_impl() override;
  nl::json shutdown_request_impl(bool restart) override;
  nl::json interrupt_request_impl() override;

  void set_request_context(xeus::xrequest_context context) override;
  const xeus::xrequest_context& get_request_context() const noexcept override;

  nl::json execute(const std::string& code, const xeus::execute_request_config& config,
                   const nl::json& user_expressions);
  // A cell of a subshell, on its thread, on that thread's own event loop
  // (interp_rpc_kernel/subshell_loop.py). Needs the GIL.
  nl::json execute_in_subshell(const std::string& code,
                               const xeus::execute_request_config& config,
                               const nl::json& user_expressions);

  void prepare_python();
  void start_import();
  void wait_for_import();
  void start_shell();
  void wire_shell();
  void show_traceback(const pybind11::handle& etype, const pybind11::handle& evalue,
                      const pybind11::handle& traceback);
  void report(pybind11::error_already_set& error);

  output_parent m_parent;
  interrupter m_interrupter;
  std::unique_ptr<sigint_relay> p_sigint_relay;  // from configure() on
  bool m_sigint_unblocked = false;  // in the main thread, from the first request on
  kernel::comm_manager m_comms;

  pybind11::module_ m_module;  // our Python classes
  pybind11::object m_kernel_object;  // get_ipython().kernel
  pybind11::object m_loader;  // the thread importing IPython
  pybind11::object m_import_canceller;  // in sys.meta_path while it imports
  std::atomic<std::thread::id> m_loader_id{};
  wake_pipe m_import_done;  // readable once the loader has finished
  pybind11::object m_shell;
  std::atomic<bool> m_shell_started{false};
  pybind11::object m_event_loop;  // event_loop.KernelEventLoop, with the shell
  pybind11::object m_stdout;
  pybind11::object m_stderr;
  stream* p_stdout = nullptr;  // owned by m_stdout
  stream* p_stderr = nullptr;  // owned by m_stderr
  const std::string m_connection_file;
  std::string m_python_version;
  std::string m_banner;
  bool m_debugger_available = false;  // debugpy is installed (it loads on first use)
  control_hook m_before_interrupt;  // control thread only

  bool m_exit_requested = false;
  std::atomic<int> m_execution_count{1};  // IPython's, mirrored for other threads
  // The request the main thread handles, and the last execute request (what
  // other threads' output belongs to), as whole messages (for get_parent()).
  nl::json m_request_message = nl::json::object();
  mutable std::mutex m_execute_message_mutex;
  nl::json m_execute_message = nl::json::object();  // guarded by the mutex
  std::string m_cell_id;  // metadata.cellId of the execute request, if any
  iopub_publisher m_iopub_publisher;
  std::string m_user_name;
  std::string m_session_id;
  bool m_detached = false;

  // Declared last, so destroyed first: the GIL comes back before the Python
  // objects above are released.
  std::unique_ptr<pybind11::gil_scoped_release> p_gil_release;
};

template <class F>
void interpreter::run_for_request(const xeus::xmessage& request, F&& f) {
  pybind11::gil_scoped_acquire gil;
  if (!on_main_thread()) {
    // A subshell's request: its thread's output is pinned to it already, and
    // no interrupt reaches a subshell.
    try {
      std::forward<F>(f)();
    } catch (pybind11::error_already_set& e) {
      report(e);
    }
    flush_streams();
    return;
  }
  struct restore_parent {
    output_parent& parent;
    xeus::xrequest_context previous;
    ~restore_parent() { parent.exchange_main(std::move(previous)); }
  } parent_guard{m_parent, m_parent.exchange_main(
                               xeus::xrequest_context(request.header(), request.identities()))};
  try {
    interrupter::window interruptible(m_interrupter);
    std::forward<F>(f)();
  } catch (pybind11::error_already_set& e) {
    report(e);
  }
  flush_streams();
}

}  // namespace interp_rpc::kernel
