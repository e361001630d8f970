// input() and getpass.getpass() for the code of a cell: they ask the frontend
// for a line through the stdin channel.
//
// While an input_redirection lives (the main thread runs a cell, GIL held),
// builtins.input and getpass.getpass are ours; it puts the originals back when
// the cell ends. When the frontend does not accept input requests
// (allow_stdin is false, as with nbclient), they raise IPython's
// StdinNotImplementedError instead of waiting for an answer that never comes.
// Waiting releases the GIL, so the cell's threads keep running, and an
// interrupt ends the wait with KeyboardInterrupt.
#pragma once

#include <pybind11/pybind11.h>

namespace interp_rpc::kernel {

class interpreter;

class input_redirection {
 public:
  input_redirection(interpreter& owner, bool allow_stdin);
  ~input_redirection();
  input_redirection(const input_redirection&) = delete;
  input_redirection& operator=(const input_redirection&) = delete;

 private:
  pybind11::module_ m_builtins;
  pybind11::module_ m_getpass;
  pybind11::object m_original_input;
  pybind11::object m_original_getpass;
};

}  // namespace interp_rpc::kernel
