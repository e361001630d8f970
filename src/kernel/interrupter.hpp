// Interrupting the Python code the main thread runs for a request.
//
// Jupyter's interrupt_request arrives on the control thread. CPython raises
// KeyboardInterrupt only in the main thread, when its SIGINT handler has run:
// PyErr_SetInterrupt() trips that handler from any thread, and a SIGINT sent to
// the main thread also wakes it from a blocking call (time.sleep, a lock, a
// socket), which then checks for signals.
//
// A SIGINT must never reach a thread that is polling zmq: xeus-zmq does not
// retry on EINTR, so the poll would throw and end the kernel. Hence SIGINT is
// blocked in every thread (block_sigint_in_this_thread() in main(), before any
// thread exists, so that all threads inherit the mask) and the main thread
// unblocks it only while a window is open, that is while it runs Python code
// for a cell or a comm message. interrupt() does nothing outside a window.
#pragma once

#include <pthread.h>

#include <mutex>

namespace interp_rpc::kernel {

void block_sigint_in_this_thread();

class interrupter {
 public:
  // The constructing thread is the main thread.
  interrupter();

  // Main thread, holding the GIL: while it lives, interrupt() interrupts.
  // Closing it discards an interrupt that arrived too late to be raised in
  // the code it guarded, so that it cannot fire in the next request.
  class window {
   public:
    explicit window(interrupter& owner);
    ~window();
    window(const window&) = delete;
    window& operator=(const window&) = delete;

   private:
    interrupter& m_owner;
  };

  // Any thread (the control thread). Returns whether a window was open.
  bool interrupt();

 private:
  pthread_t m_main_thread;
  std::mutex m_mutex;
  bool m_open = false;  // guarded by m_mutex
};

}  // namespace interp_rpc::kernel
