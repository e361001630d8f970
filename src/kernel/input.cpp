#include "kernel/input.hpp"

#include <poll.h>

#include <chrono>
#include <exception>
#include <mutex>
#include <string>
#include <utility>

#include "kernel/interpreter.hpp"
#include "kernel/kernel_server.hpp"

namespace py = pybind11;
using namespace pybind11::literals;

namespace interp_rpc::kernel {

namespace {

// What the live redirections share, guarded by the GIL: how many live, the
// functions they replaced (strong references, held as raw pointers so that
// nothing is released after Python has finalized), and the main shell's
// cell's allow_stdin, which the threads it starts follow.
int g_users = 0;
PyObject* g_original_input = nullptr;
PyObject* g_original_getpass = nullptr;
bool g_main_allows_stdin = false;
// The allow_stdin of the request the calling thread runs, if it runs one.
thread_local std::optional<bool> t_allows_stdin;

// One input request at a time, whichever thread asks (the cell, a thread it
// started, a subshell): the frontend answers one prompt at a time, and the
// interpreter has one slot for the reply's handler.
std::timed_mutex& input_turn() {
  static std::timed_mutex turn;
  return turn;
}

// The main thread's turn: it waits for another thread's prompt to be
// answered, unless an interrupt ends the wait (cancel_fd readable).
std::unique_lock<std::timed_mutex> main_thread_turn(int cancel_fd) {
  std::unique_lock turn(input_turn(), std::defer_lock);
  while (!turn.try_lock_for(std::chrono::milliseconds(20))) {
    pollfd cancelled{cancel_fd, POLLIN, 0};
    if (::poll(&cancelled, 1, 0) > 0) {
      throw input_interrupted("the wait for input was interrupted");
    }
  }
  return turn;
}

// xeus::blocking_input_request, except that its reply handler, which points
// into this frame, is removed even when the wait ends with an exception.
std::string wait_for_input(xeus::xinterpreter& interpreter, const std::string& prompt,
                           bool password) {
  std::string value;
  interpreter.register_input_handler([&value](const std::string& reply) { value = reply; });
  struct unregister {
    xeus::xinterpreter& interpreter;
    ~unregister() { interpreter.register_input_handler(nullptr); }
  } guard{interpreter};
  interpreter.input_request(prompt, password);
  return value;
}

py::str ask_frontend(interpreter& owner, const py::object& prompt, bool password) {
  if (!t_allows_stdin.value_or(g_main_allows_stdin)) {
    const py::object error = py::module_::import("IPython.core.error").attr("StdinNotImplementedError");
    PyErr_SetString(error.ptr(),
                    "input was called, but this frontend does not support input requests.");
    throw py::error_already_set();
  }
  owner.flush_streams();
  const std::string text = py::str(prompt);
  // The request's parent is the calling thread's (output_parent): the
  // cell's, the latest execute request for a thread a cell started, as
  // under ipykernel, or the subshell's request.
  const bool main_thread = owner.on_main_thread();
  std::string value;
  {
    py::gil_scoped_release release;
    try {
      if (main_thread) {
        interrupter::cancellable_wait interruptible(owner.interrupts());
        const auto turn = main_thread_turn(owner.interrupts().cancel_fd());
        value = wait_for_input(owner, text, password);
      } else {
        const std::lock_guard turn(input_turn());
        value = wait_for_input(owner, text, password);
      }
    } catch (const std::exception& e) {
      py::gil_scoped_acquire gil;
      if (main_thread) {
        // An interrupt ends the wait (the server, or the turn, sees it) and
        // tripped the KeyboardInterrupt.
        if (PyErr_CheckSignals() != 0) {
          throw py::error_already_set();
        }
      }
      throw std::runtime_error(std::string("input request failed: ") + e.what());
    }
  }
  return py::str(value);
}

}  // namespace

input_redirection::input_redirection(interpreter& owner, bool allow_stdin)
    : m_on_main_thread(owner.on_main_thread()),
      m_previous_thread_allows(std::exchange(t_allows_stdin, allow_stdin)),
      m_previous_main_allows(g_main_allows_stdin) {
  if (m_on_main_thread) {
    g_main_allows_stdin = allow_stdin;
  }
  if (g_users++ > 0) {
    return;
  }
  py::module_ builtins = py::module_::import("builtins");
  py::module_ getpass = py::module_::import("getpass");
  g_original_input = py::object(builtins.attr("input")).release().ptr();
  g_original_getpass = py::object(getpass.attr("getpass")).release().ptr();
  builtins.attr("input") = py::cpp_function(
      [&owner](const py::object& prompt) { return ask_frontend(owner, prompt, false); },
      "prompt"_a = "");
  getpass.attr("getpass") = py::cpp_function(
      [&owner](const py::object& prompt, const py::object&) {
        return ask_frontend(owner, prompt, true);
      },
      "prompt"_a = "Password: ", "stream"_a = py::none());
}

input_redirection::~input_redirection() {
  t_allows_stdin = m_previous_thread_allows;
  if (m_on_main_thread) {
    g_main_allows_stdin = m_previous_main_allows;
  }
  if (--g_users > 0) {
    return;
  }
  py::module_::import("builtins").attr("input") =
      py::reinterpret_steal<py::object>(std::exchange(g_original_input, nullptr));
  py::module_::import("getpass").attr("getpass") =
      py::reinterpret_steal<py::object>(std::exchange(g_original_getpass, nullptr));
}

}  // namespace interp_rpc::kernel
