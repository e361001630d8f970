#include "kernel/input.hpp"

#include <exception>
#include <string>

#include "kernel/interpreter.hpp"
#include "kernel/subshells.hpp"

namespace py = pybind11;
using namespace pybind11::literals;

namespace interp_rpc::kernel {

namespace {

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

py::str ask_frontend(interpreter& owner, bool allow_stdin, const py::object& prompt,
                     bool password) {
  if (!allow_stdin) {
    const py::object error = py::module_::import("IPython.core.error").attr("StdinNotImplementedError");
    PyErr_SetString(error.ptr(),
                    "input was called, but this frontend does not support input requests.");
    throw py::error_already_set();
  }
  if (subshells::current()) {
    throw py::value_error("input() is not available in a subshell: the stdin channel "
                          "belongs to the main shell");
  }
  if (!owner.on_main_thread()) {
    throw py::value_error("input() is only available to the code of the cell itself, "
                          "not to the threads it starts");
  }
  owner.flush_streams();
  const std::string text = py::str(prompt);
  std::string value;
  {
    py::gil_scoped_release release;
    try {
      interrupter::cancellable_wait interruptible(owner.interrupts());
      value = wait_for_input(owner, text, password);
    } catch (const std::exception& e) {
      // The server ends the wait when an interrupt cancels it; the interrupt
      // tripped the KeyboardInterrupt.
      py::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() != 0) {
        throw py::error_already_set();
      }
      throw std::runtime_error(std::string("input request failed: ") + e.what());
    }
  }
  return py::str(value);
}

}  // namespace

input_redirection::input_redirection(interpreter& owner, bool allow_stdin)
    : m_builtins(py::module_::import("builtins")),
      m_getpass(py::module_::import("getpass")),
      m_original_input(m_builtins.attr("input")),
      m_original_getpass(m_getpass.attr("getpass")) {
  m_builtins.attr("input") = py::cpp_function(
      [&owner, allow_stdin](const py::object& prompt) {
        return ask_frontend(owner, allow_stdin, prompt, false);
      },
      "prompt"_a = "");
  m_getpass.attr("getpass") = py::cpp_function(
      [&owner, allow_stdin](const py::object& prompt, const py::object&) {
        return ask_frontend(owner, allow_stdin, prompt, true);
      },
      "prompt"_a = "Password: ", "stream"_a = py::none());
}

input_redirection::~input_redirection() {
  m_builtins.attr("input") = m_original_input;
  m_getpass.attr("getpass") = m_original_getpass;
}

}  // namespace interp_rpc::kernel
