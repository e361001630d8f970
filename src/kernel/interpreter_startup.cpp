// The interpreter's startup: Python prepared, IPython imported on a thread,
// the shell started and wired to Jupyter (interpreter.hpp says when).
#include "kernel/interpreter.hpp"

#include <poll.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <thread>

#include <pybind11/eval.h>
#include <pybind11/stl.h>

#include "kernel/cell_parent.hpp"
#include "kernel/live_view.hpp"
#include "kernel/workers_feed.hpp"
#include "kernel/kernel_object.hpp"
#include "kernel/message_json.hpp"
#include "kernel/python_config.hpp"
#include "kernel/startup_imports.hpp"

namespace py = pybind11;
using namespace pybind11::literals;

namespace interp_rpc::kernel {

namespace {

// Whether the Python code calling the current C++ function is `body`.
bool called_from(const py::handle& body) {
  PyFrameObject* frame = PyThreadState_GetFrame(PyThreadState_Get());
  if (frame == nullptr) {
    return false;
  }
  PyCodeObject* code = PyFrame_GetCode(frame);
  const bool same = reinterpret_cast<PyObject*>(code) == body.ptr();
  Py_DECREF(code);
  Py_DECREF(frame);
  return same;
}

// On the import thread: an IPython this kernel cannot work with ends the
// kernel at startup, saying why (interp_rpc_kernel/compatibility.py).
void check_ipython_api() {
  const py::module_ compatibility = py::module_::import("interp_rpc_kernel.compatibility");
  const py::object problem = compatibility.attr("ipython_problem")();
  if (problem.is_none()) {
    return;
  }
  const py::module_ ipython = py::module_::import("IPython");
  const std::string where = py::str(ipython.attr("__file__")).cast<std::string>();
  const std::string tested = py::str(compatibility.attr("TESTED_VERSIONS")).cast<std::string>();
  std::cerr << "interp-rpc-kernel: unsupported IPython (" << where
            << "): " << py::str(problem).cast<std::string>()
            << ". This kernel is tested with IPython" << tested
            << "; install that: pip install 'ipython" << tested << "'" << std::endl;
  std::_Exit(1);
}

}  // namespace

/**** startup ****/

void interpreter::configure_impl() {
  prepare_python();
  // Python threads (the import below, and later the cells' threads) run
  // while the kernel waits for requests.
  p_gil_release = std::make_unique<py::gil_scoped_release>();
}

void interpreter::prepare_python() {
  use_installed_python_as_executable();
  static py::module_::module_def module_def;
  m_module = py::module_::create_extension_module(
      "_interp_rpc_kernel", "Objects the interp-rpc kernel gives to Python.", &module_def);
  bind_stream(m_module);
  bind_comm(m_module);
  bind_live_view(m_module);
  bind_workers_feed(m_module);
  bind_cell_parent(m_module);
  // Importable, so that interp_rpc's notebook extension finds the kernel's
  // live status publisher (interp_rpc/notebook/live.py).
  py::module_::import("sys").attr("modules")["_interp_rpc_kernel"] = m_module;
  m_kernel_object = make_kernel_object(m_module, *this);
  m_module.attr("connection_file") = m_connection_file;  // %connect_info

  // CPython installs its KeyboardInterrupt handler only if SIGINT was not
  // ignored when the process started, and interrupts need it. Only the main
  // thread may do this.
  const py::module_ signal = py::module_::import("signal");
  signal.attr("signal")(SIGINT, signal.attr("default_int_handler"));
  // The kernel's own C handler takes SIGINT from Python's (sigint_relay.hpp).
  p_sigint_relay = std::make_unique<sigint_relay>(m_interrupter);

  const py::module_ sys = py::module_::import("sys");
  const std::string version = sys.attr("version").cast<std::string>();
  m_python_version = version.substr(0, version.find(' '));
  m_debugger_available =
      !py::module_::import("importlib.util").attr("find_spec")("debugpy").is_none();
  m_banner = "Python " + version +
             "\nType 'copyright', 'credits' or 'license' for more information\n"
             "interp-rpc " INTERP_RPC_VERSION " -- IPython in a xeus kernel. Type '?' for help.\n";

  start_import();
}

void interpreter::start_import() {
  // Importing IPython takes most of the startup (about 0.3 s of CPU). It
  // happens on a thread, so the kernel answers kernel_info (the frontend's
  // "ready") meanwhile; the shell starts on the first request that needs it.
  //
  // A stop cancels it: the loader's next import raises ImportCancelled, a
  // BaseException, so that no module's `except ImportError` or `except
  // Exception` takes it for a missing optional dependency. importlib then
  // removes the modules it leaves half imported.
  const py::object cancelled = py::reinterpret_steal<py::object>(PyErr_NewExceptionWithDoc(
      "_interp_rpc_kernel.ImportCancelled", "The kernel stopped while IPython was being imported.",
      PyExc_BaseException, nullptr));
  if (!cancelled) {
    throw py::error_already_set();
  }
  m_module.attr("ImportCancelled") = cancelled;
  const py::cpp_function find_spec(
      [this, cancelled](const py::handle& name, const py::handle&,
                        const py::handle&) -> py::object {
        if (std::this_thread::get_id() != m_loader_id.load()) {
          return py::none();
        }
        if (m_interrupter.stopping()) {
          PyErr_SetString(cancelled.ptr(), "the kernel is stopping");
          throw py::error_already_set();
        }
        const std::string module = py::str(name).cast<std::string>();
        if (kept_out_of_startup(module)) {
          // As if it were not installed (see startup_imports.hpp).
          PyErr_SetObject(PyExc_ModuleNotFoundError,
                          py::str("the kernel does not load {} at startup").format(module).ptr());
          throw py::error_already_set();
        }
        return py::none();  // not ours to find: the next finder looks
      },
      "name"_a, "path"_a = py::none(), "target"_a = py::none());
  m_import_canceller =
      py::module_::import("types").attr("SimpleNamespace")("find_spec"_a = find_spec);
  py::list meta_path = py::module_::import("sys").attr("meta_path");
  meta_path.insert(0, m_import_canceller);
  stand_in_for_terminal_embed();

  m_loader = py::module_::import("threading")
                 .attr("Thread")("target"_a = py::cpp_function([this, cancelled] {
                                   m_loader_id = std::this_thread::get_id();
                                   struct signal_done {
                                     wake_pipe& done;
                                     ~signal_done() { done.notify(); }
                                   } done{m_import_done};
                                   // First what the check needs, so that an
                                   // unsupported IPython is named as such.
                                   const char* name = "interp_rpc_kernel.compatibility";
                                   try {
                                     check_ipython_api();
                                     for (const char* module : {"interp_rpc_kernel.shell", "interp_rpc_kernel.event_loop", "comm",
                                                                "IPython.core.compilerop",
                                                                "IPython.utils.tokenutil"}) {
                                       name = module;
                                       py::module_::import(module);
                                     }
                                     bind_terminal_embed_stand_in();
                                     lend_jedi_to_the_completer();
                                   } catch (py::error_already_set& e) {
                                     if (!e.matches(cancelled)) {
                                       std::cerr << "interp-rpc-kernel: cannot import " << name
                                                 << ": " << e.what() << std::endl;
                                       std::_Exit(1);
                                     }
                                   }
                                   py::module_::import("sys").attr("meta_path").attr("remove")(
                                       m_import_canceller);
                                 }),
                                 "name"_a = "interp-rpc-import", "daemon"_a = true);
  m_loader.attr("start")();
}

void interpreter::wait_for_import() {
  bool interrupted = false;
  {
    py::gil_scoped_release release;
    interrupter::cancellable_wait cancellable(
        m_interrupter, interrupter::cancellable_wait::kept_interrupt::ends_it);
    pollfd fds[] = {{m_import_done.fd(), POLLIN, 0}, {m_interrupter.cancel_fd(), POLLIN, 0}};
    while (::poll(fds, 2, -1) < 0 && errno == EINTR) {
    }
    // Not which descriptor the poll saw: an import done before this cell took
    // the GIL is readable with the Ctrl-C the cell kept meanwhile.
    interrupted = cancellable.end();
  }
  if (m_interrupter.stopping()) {
    PyErr_SetString(PyExc_RuntimeError, "the kernel is stopping; IPython was not started");
    throw py::error_already_set();
  }
  if (interrupted) {
    PyErr_SetString(PyExc_KeyboardInterrupt, "interrupted while IPython was starting");
    throw py::error_already_set();
  }
  // Quick now: the loader has finished.
  m_loader.attr("join")();
}

void interpreter::wait_for_startup_import() const {
  pollfd done{m_import_done.fd(), POLLIN, 0};
  while (::poll(&done, 1, -1) < 0 && errno == EINTR) {
  }
}

py::object& interpreter::shell() {
  if (!m_shell) {
    start_shell();
  }
  return m_shell;
}

void interpreter::start_shell() {
  // Importing on this thread too while the loader runs could hand us half
  // initialized modules (importlib accepts those in a cross-thread cycle).
  wait_for_import();

  // Before IPython and extensions import anything that makes comms.
  m_comms.install(m_kernel_object);

  // KernelShellApp's initialization, with our wiring done before extensions
  // and startup code run: they may print, display or open comms.
  py::object app = py::module_::import("interp_rpc_kernel.shell").attr("KernelShellApp")();
  app.attr("initialize")("argv"_a = py::list());
  // Load the interp_rpc extension if the package provides one; IPython skips a
  // module without load_ipython_extension silently.
  py::list extensions;
  for (const py::handle extension : app.attr("default_extensions")) {
    extensions.append(extension);
  }
  extensions.append("interp_rpc");
  app.attr("default_extensions") = extensions;
  app.attr("user_ns") = py::dict();
  app.attr("init_path")();
  app.attr("init_shell")();
  m_shell = app.attr("shell");
  // Before startup code runs: it may start tasks.
  m_event_loop = py::module_::import("interp_rpc_kernel.event_loop").attr("KernelEventLoop")();
  wire_shell();
  py::module_::import("os").attr("environ").attr("setdefault")(
      "MPLBACKEND", "module://matplotlib_inline.backend_inline");
  app.attr("init_gui_pylab")();
  app.attr("init_extensions")();
  app.attr("init_code")();
  flush_streams();

  // What exists now lives as long as the kernel: the garbage collector need
  // not scan it again, which keeps full collections (IPython makes one at
  // exit) and hence shutdown quick.
  py::module_::import("gc").attr("freeze")();
  m_shell_started = true;
}

void interpreter::start_shell_on_main() {
  if (m_detached) {
    return;
  }
  py::gil_scoped_acquire gil;
  try {
    shell();
  } catch (py::error_already_set& e) {
    // An interrupt or a stop while IPython was imported: the subshell's
    // request that asked gets the error when it asks again.
    e.discard_as_unraisable("starting the shell for a subshell");
  }
}

void interpreter::wire_shell() {
  m_shell.attr("kernel") = m_kernel_object;

  py::object display_pub = m_shell.attr("display_pub");
  display_pub.attr("send_display_data") = py::cpp_function(
      [this](const py::object& data, const py::object& metadata, const py::object& transient,
             bool update) {
        flush_streams();
        nl::json data_json = to_message_json(data, "data");
        nl::json metadata_json = to_message_json_object(metadata, "metadata");
        nl::json transient_json = to_message_json_object(transient, "transient");
        if (update) {
          update_display_data(std::move(data_json), std::move(metadata_json),
                              std::move(transient_json));
        } else {
          display_data(std::move(data_json), std::move(metadata_json), std::move(transient_json));
        }
        wait_for_iopub_room();
      });
  display_pub.attr("send_clear_output") = py::cpp_function([this](bool wait) {
    flush_streams();
    clear_output(wait);
  });
  m_shell.attr("displayhook").attr("send_execute_result") = py::cpp_function(
      [this](int execution_count, const py::object& data, const py::object& metadata) {
        publish_execution_result(execution_count, to_message_json(data, "data"),
                                 to_message_json_object(metadata, "metadata"));
      });
  // IPython reports every error it shows through _showtraceback.
  m_shell.attr("_showtraceback") = py::cpp_function(
      [this](const py::object& etype, const py::object& evalue, const py::object& stb) {
        show_traceback(etype, evalue, stb);
      });
  // Requests for the frontend, as ipykernel sends them: exit() and quit() tell
  // it the kernel ends (or, with keep_kernel=True, that only the frontend
  // should close), %load puts code in the next cell.
  m_shell.attr("ask_exit") = py::cpp_function([this] {
    const py::object keep_kernel = m_shell.attr("keepkernel_on_exit");
    m_exit_requested = !keep_kernel.cast<bool>();
    m_shell.attr("payload_manager")
        .attr("write_payload")(py::dict("source"_a = "ask_exit", "keepkernel"_a = keep_kernel));
  });
  m_shell.attr("set_next_input") = py::cpp_function(
      [this](const py::str& text, bool replace) {
        m_shell.attr("payload_manager")
            .attr("write_payload")(py::dict("source"_a = "set_next_input", "text"_a = text,
                                            "replace"_a = replace));
      },
      "text"_a, "replace"_a = false);
  // Interrupts reach the user's code only (see interrupter.hpp). IPython runs
  // it in the coroutine run_code, hence a Python wrapper.
  const py::object interruptible =
      py::module_::import("interp_rpc_kernel.interruptible").attr("interruptible");
  // Only the main thread's code: a subshell's cell runs run_code on its own
  // thread, and a window it opened would let an interrupt trip the main
  // thread wherever that is, in IPython's bookkeeping too.
  m_shell.attr("run_code") = interruptible(
      m_shell.attr("run_code"), py::cpp_function([this] {
        if (on_main_thread()) m_interrupter.open();
      }),
      py::cpp_function([this] {
        if (on_main_thread()) m_interrupter.close();
      }));
  // Interrupts wait while IPython reports an error (see interrupter.hpp).
  // Its report of the error that ended the user's code comes from run_code.
  const py::object showtraceback = m_shell.attr("showtraceback");
  const py::object run_code_body =
      py::type::handle_of(m_shell).attr("run_code").attr("__code__");
  m_shell.attr("showtraceback") = py::cpp_function(
      [this, showtraceback, run_code_body](const py::args& args, const py::kwargs& kwargs) {
        if (!on_main_thread()) {
          return showtraceback(*args, **kwargs);  // a subshell's: no interrupt to hold
        }
        const bool ends_window = called_from(run_code_body);
        py::object result;
        {
          interrupter::report_scope reporting(m_interrupter, ends_window);
          result = showtraceback(*args, **kwargs);
        }
        // A traceback the user's code showed: an interrupt held back during
        // the report is raised here, in that code, as it returns.
        if (!ends_window && PyErr_CheckSignals() != 0) {
          throw py::error_already_set();
        }
        return result;
      });
  const py::module_ sys = py::module_::import("sys");
  auto out = std::make_unique<stream>(*this, "stdout", 1);
  auto err = std::make_unique<stream>(*this, "stderr", 2);
  p_stdout = out.get();
  p_stderr = err.get();
  p_stdout->set_sibling(*p_stderr);
  p_stderr->set_sibling(*p_stdout);
  m_stdout = py::cast(std::move(out));
  m_stderr = py::cast(std::move(err));
  sys.attr("stdout") = m_stdout;
  sys.attr("stderr") = m_stderr;
  p_stdout->capture_fd();
  p_stderr->capture_fd();
}

}  // namespace interp_rpc::kernel
