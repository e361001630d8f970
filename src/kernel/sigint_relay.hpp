// SIGINT sent to the kernel process: `kill -INT`, os.kill(os.getpid(),
// SIGINT) in a cell, a frontend whose kernelspec says interrupt_mode
// "signal", a terminal's Ctrl-C.
//
// CPython's own C handler would trip Python's SIGINT handler whenever the
// signal lands: in IPython's bookkeeping, twice, in the middle of an error
// report (see interrupter.hpp). So the kernel installs its own C handler,
// which leaves the decision to the interrupter:
// - on the main thread, while an interrupt may be raised, it trips Python's
//   handler itself (interrupter::trip_from_signal_handler), before the
//   interrupted system call returns, as CPython's would;
// - otherwise (another thread took the signal, or the main thread is not in
//   the user's code) it writes a pipe, and the relay thread calls
//   interrupter::interrupt(), as the control thread does for an
//   interrupt_request. interrupt() takes a mutex: a signal handler must not.
// Each SIGINT takes one of the two paths, so it trips the handler once.
//
// The handler is installed without SA_RESTART, as CPython installs its own,
// so that the system call it interrupts fails with EINTR.
//
// The user's code may replace it: signal.signal(SIGINT, f) installs
// CPython's C handler, which calls f (or SIG_IGN, SIG_DFL). That lasts until
// the end of the cell: restore() then gives SIGINT back to
// signal.default_int_handler and the kernel's C handler, as ipykernel
// restores Python's default handler after each request, so that the next
// cell can be interrupted whatever this one did.
#pragma once

#include <csignal>
#include <thread>

#include "kernel/interrupter.hpp"
#include "kernel/wake_pipe.hpp"

namespace interp_rpc::kernel {

class sigint_relay {
 public:
  // Main thread, holding the GIL, with SIGINT blocked, after Python's own
  // SIGINT handler was installed (signal.signal(SIGINT,
  // signal.default_int_handler)). One per process.
  explicit sigint_relay(interrupter& target);
  // Puts CPython's C handler back.
  ~sigint_relay();
  sigint_relay(const sigint_relay&) = delete;
  sigint_relay& operator=(const sigint_relay&) = delete;

  // Main thread, holding the GIL, after a cell: SIGINT is the kernel's
  // again, whatever the cell made of it.
  void restore();

 private:
  void relay();

  interrupter& m_target;
  wake_pipe m_received;  // written by the handler
  wake_pipe m_stop;
  struct sigaction m_python_action {};  // CPython's C handler, as installed
  std::thread m_thread;
};

}  // namespace interp_rpc::kernel
