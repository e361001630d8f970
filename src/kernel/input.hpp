// input() and getpass.getpass() for the code of a cell, the threads it
// starts and subshells: they ask the frontend for a line through the stdin
// channel, one prompt at a time.
//
// While an input_redirection lives (a cell runs on the main thread or in a
// subshell, GIL held), builtins.input and getpass.getpass are ours; the last
// one to end puts the originals back, so that between cells they are the
// builtins again, as under ipykernel. Whether a prompt may be sent is the
// calling thread's request's allow_stdin (a thread a cell started follows the
// main shell's cell); when the frontend does not accept input requests (as
// with nbclient), they raise IPython's StdinNotImplementedError instead of
// waiting for an answer that never comes. Waiting releases the GIL, so the
// cell's threads keep running, and an interrupt ends the wait with
// KeyboardInterrupt.
#pragma once

#include <optional>

#include <pybind11/pybind11.h>

namespace interp_rpc::kernel {

class interpreter;

class input_redirection {
 public:
  // Holding the GIL.
  input_redirection(interpreter& owner, bool allow_stdin);
  ~input_redirection();
  input_redirection(const input_redirection&) = delete;
  input_redirection& operator=(const input_redirection&) = delete;

 private:
  bool m_on_main_thread;
  std::optional<bool> m_previous_thread_allows;
  bool m_previous_main_allows;
};

}  // namespace interp_rpc::kernel
