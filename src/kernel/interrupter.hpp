// Interrupting the Python code the main thread runs for a request.
//
// Jupyter's interrupt_request arrives on the control thread; a SIGINT sent to
// the kernel (`kill -INT`, os.kill in a cell, a frontend in signal mode)
// reaches the sigint_relay (sigint_relay.hpp). Both end here. CPython raises
// KeyboardInterrupt only in the main thread, once its SIGINT handler has
// been tripped: PyErr_SetInterrupt() trips it from any thread, exactly once
// per interrupt. A blocking call (time.sleep, a lock, a socket) must also be
// woken: a private "wake" signal, sent to the main thread alone, makes it
// fail with EINTR, and CPython then checks for the tripped handler.
//
// SIGINT is unblocked in the main thread and in the threads a cell starts, so
// that the processes they spawn, by any means, start with the usual mask and
// can be interrupted. The kernel's own C++ threads keep it blocked (main()
// blocks it before any thread exists; the main thread unblocks it once the
// server's threads run). The kernel's own C handler, not CPython's, takes
// the signal, so that it trips Python's handler only through the logic
// below: once, and only inside the window.
//
// The window. An interrupt is raised only while the user's code runs
// (IPython's run_code, a comm callback), not while IPython does its own
// bookkeeping around it: a KeyboardInterrupt raised right after a `with
// lock:` acquired its lock skips the release (CPython raises it before the
// with block is set up), and the lock of IPython's history, leaked that way,
// deadlocks the next cell.
//
// Error reports. IPython shows an error in showtraceback, which catches a
// KeyboardInterrupt raised while it formats the traceback and prints it in
// place of the report. An interrupt arriving then (a second Ctrl-C, while
// the first's error is being shown) would lose the report, or, in a
// traceback the cell shows itself (%tb, ipywidgets' Output), the interrupt.
// So interrupts wait while an error is reported (see report_scope).
#pragma once

#include <pthread.h>

#include <atomic>
#include <mutex>

#include "kernel/wake_pipe.hpp"

namespace interp_rpc::kernel {

// Blocks SIGINT in the calling thread, and in the threads it starts from now
// on; a process forked from any thread gets it unblocked again.
void block_sigint_in_this_thread();
void unblock_sigint_in_this_thread();

class interrupter {
 public:
  // The constructing thread is the main thread.
  interrupter();

  // Main thread, holding the GIL. Windows nest; interrupt() interrupts while
  // one is open. Closing the last one discards an interrupt that arrived too
  // late to be raised in the code it guarded, so that it cannot fire later.
  void open();
  void close();

  // open() and close() for C++ callers.
  class window {
   public:
    explicit window(interrupter& owner) : m_owner(owner) { m_owner.open(); }
    ~window() { m_owner.close(); }
    window(const window&) = delete;
    window& operator=(const window&) = delete;

   private:
    interrupter& m_owner;
  };

  // Main thread, holding the GIL, around IPython's report of an error: an
  // interrupt that comes meanwhile (or that tripped the handler just before)
  // is held back.
  // - ends_window false (a traceback the user's code shows): once the report
  //   is over, the held interrupt trips the handler again, for that code.
  // - ends_window true (IPython's report of the error that ended the user's
  //   code, from run_code): interrupts are held until the window closes,
  //   and then dropped (the cell is over: a KeyboardInterrupt after the
  //   report would report a second error) or, in a nested window (a cell
  //   that called run_cell), raised in the code around it.
  class report_scope {
   public:
    report_scope(interrupter& owner, bool ends_window);
    ~report_scope();
    report_scope(const report_scope&) = delete;
    report_scope& operator=(const report_scope&) = delete;

   private:
    interrupter& m_owner;
  };

  // Main thread, around an execute request from the moment the shell takes
  // it, before the cell is announced and before it takes the GIL. An interrupt that arrives while the request runs outside a
  // window (waiting for the GIL or for IPython to start, or in IPython's
  // bookkeeping between two statements) is kept: the next window raises it
  // as it opens, or a cancellable wait ends with it. One still kept when the
  // request ends is dropped: the cell it was meant for is over.
  class execution {
   public:
    explicit execution(interrupter& owner);
    ~execution();
    execution(const execution&) = delete;
    execution& operator=(const execution&) = delete;

   private:
    interrupter& m_owner;
  };

  // Main thread, holding the GIL, around a whole request: closes the window
  // if Python left it open (a coroutine of IPython's dropped before its
  // finally ran), so that no window outlives its request.
  class request_guard {
   public:
    explicit request_guard(interrupter& owner) : m_owner(owner) {}
    ~request_guard();
    request_guard(const request_guard&) = delete;
    request_guard& operator=(const request_guard&) = delete;

   private:
    interrupter& m_owner;
  };

  // Main thread, without the GIL, while it blocks outside Python: waiting for
  // the frontend's answer to an input request, or for IPython's import. An
  // interrupt, or the kernel's stop, makes cancel_fd() readable, which ends
  // the wait (the waiter polls it). Outside a window, an interrupt only
  // ends the wait: it trips no KeyboardInterrupt. A wait that is the
  // execution's own step (IPython's import, before the first cell) also ends
  // with an interrupt the execution kept; other waits leave it for the
  // window it is kept for.
  class cancellable_wait {
   public:
    enum class kept_interrupt { ends_it, waits };
    explicit cancellable_wait(interrupter& owner, kept_interrupt kept = kept_interrupt::waits);
    // Ends the wait (if end() did not).
    ~cancellable_wait();
    cancellable_wait(const cancellable_wait&) = delete;
    cancellable_wait& operator=(const cancellable_wait&) = delete;

    // Ends the wait and says whether an interrupt or the stop came during it,
    // even if what it waited for came too (the poll saw both): the user's
    // Ctrl-C wins. An interrupt from here on finds no wait: the execution
    // keeps it or a window raises it, so none is lost in between.
    bool end();

   private:
    interrupter& m_owner;
    bool m_ended = false;
  };
  int cancel_fd() const noexcept { return m_cancel.fd(); }

  // Any thread (the control thread, the sigint_relay's). Returns whether it
  // reached the user's code or a cancellable wait.
  bool interrupt();

  // A SIGINT handler running on the main thread: async-signal-safe. Trips
  // Python's handler if an interrupt may be raised right now (a window is
  // open, no report holds interrupts, no cancellable wait runs) and returns
  // true; otherwise returns false, and the caller hands the signal to
  // interrupt() from another thread. Tripping here, before the signalled
  // system call returns, is what makes `os.kill(os.getpid(), SIGINT);
  // time.sleep(600)` raise before the sleep begins, as in plain CPython.
  bool trip_from_signal_handler() noexcept;

  // Any thread (the control thread), when the kernel shuts down: interrupts
  // the user's code now and whenever it starts from now on (a cell queued or
  // still waiting for IPython to start), so that the main thread gets back to
  // its loop and stops. A cancellable wait ends, now or as it begins.
  void stop();
  // Any thread: whether stop() was called.
  bool stopping();

 private:
  // Whether an interrupt now is held back (see report_scope); with m_mutex.
  bool holding() const noexcept;
  // Publishes for trip_from_signal_handler() whether an interrupt may be
  // raised now; with m_mutex, after every change of the state below.
  void publish_may_trip() noexcept;

  pthread_t m_main_thread;
  wake_pipe m_cancel;
  std::mutex m_mutex;
  // Guarded by m_mutex:
  int m_depth = 0;  // open windows
  int m_reports = 0;  // report_scopes alive
  int m_ended_depth = 0;  // the window whose code has ended in an error; 0: none
  bool m_held = false;  // an interrupt held back (see report_scope)
  bool m_waiting = false;  // in a cancellable wait
  bool m_wait_cancelled = false;  // an interrupt or the stop came during it
  bool m_executing = false;  // an execution is alive
  bool m_kept = false;  // an interrupt kept for the execution's next window
  bool m_stopping = false;
  // m_depth > 0 && !holding() && !m_waiting, for the signal handler, which
  // must not take m_mutex. It runs on the main thread, which also makes every
  // change of that state: program order is all it needs.
  std::atomic<bool> m_may_trip{false};
  static_assert(std::atomic<bool>::is_always_lock_free, "read by a signal handler");
};

}  // namespace interp_rpc::kernel
