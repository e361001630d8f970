// sys.stdout and sys.stderr of the kernel: text written to them becomes IOPub
// "stream" messages.
//
// Line-buffered, like a terminal: a write publishes everything up to its last
// newline, flush() publishes the rest, and the kernel flushes both streams
// before any other output and at the end of every cell, so messages keep the
// order in which they were written. print() therefore costs one message, not
// one per write() call (print writes the text and the newline separately).
//
// Every method runs with the GIL held (they are called from Python), which is
// what serializes access to the buffer between Python threads; publishing goes
// through xeus, which is safe from any thread here (see kernel_server).
#pragma once

#include <string>

#include <pybind11/pybind11.h>
#include <xeus/xinterpreter.hpp>

namespace interp_rpc::kernel {

class stream {
 public:
  // name: "stdout" or "stderr"; fd: the process's own descriptor for it.
  stream(xeus::xinterpreter& interpreter, std::string name, int fd);

  pybind11::int_ write(const pybind11::str& text);
  void flush();

  // Once the kernel is gone, text goes to the process's original stream
  // (sys.__stdout__ or sys.__stderr__) instead.
  void detach();

  const std::string& name() const noexcept { return m_name; }
  int fileno() const noexcept { return m_fd; }

 private:
  void publish(std::string text);

  xeus::xinterpreter* p_interpreter;
  std::string m_name;
  int m_fd;
  std::string m_buffer;
};

// Defines the Python class Stream in module m.
void bind_stream(pybind11::module_& m);

}  // namespace interp_rpc::kernel
