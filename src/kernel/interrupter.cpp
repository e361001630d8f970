#include "kernel/interrupter.hpp"

#include <Python.h>

#include <csignal>

namespace interp_rpc::kernel {

namespace {

// The signal that wakes the main thread from a blocking call. A real-time
// signal, so that it is never one a library or the user relies on; it is
// only ever sent to the main thread.
int wake_signal() { return SIGRTMIN + 3; }

// Does nothing: arriving is its whole purpose. Without SA_RESTART, so that
// the call it interrupts fails with EINTR.
void on_wake(int) {}

void set_sigint_blocked(bool blocked) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  pthread_sigmask(blocked ? SIG_BLOCK : SIG_UNBLOCK, &set, nullptr);
}

void unblock_sigint_in_child() { set_sigint_blocked(false); }

}  // namespace

void block_sigint_in_this_thread() {
  set_sigint_blocked(true);
  // A process forked by one of the kernel's own threads runs code that
  // expects the usual mask too. Registered once: handlers pile up.
  static const int registered = pthread_atfork(nullptr, nullptr, unblock_sigint_in_child);
  static_cast<void>(registered);
}

void unblock_sigint_in_this_thread() { set_sigint_blocked(false); }

interrupter::interrupter() : m_main_thread(pthread_self()) {
  struct sigaction action {};
  action.sa_handler = on_wake;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  sigaction(wake_signal(), &action, nullptr);
}

void interrupter::open() {
  std::lock_guard lock(m_mutex);
  ++m_depth;
  if (m_stopping || m_kept) {
    m_kept = false;
    PyErr_SetInterrupt();
  }
  publish_may_trip();  // once the window is open
}

void interrupter::close() {
  {
    std::lock_guard lock(m_mutex);
    if (m_depth == 0) {
      return;
    }
    --m_depth;
    if (m_ended_depth > m_depth) {
      m_ended_depth = 0;
    }
    // Before the stale trip below is discarded: a SIGINT from here on goes
    // to interrupt(), which finds no window.
    publish_may_trip();
    if (m_depth > 0) {
      // Back in the code around a nested window (a cell that called
      // run_cell): it gets the interrupt the inner report held back.
      if (m_held && !holding()) {
        m_held = false;
        PyErr_SetInterrupt();
      }
      return;
    }
    m_held = false;
  }
  // From here on no interrupt can be requested, so a tripped SIGINT handler is
  // stale: run the handlers now and drop the KeyboardInterrupt they raise.
  if (PyErr_CheckSignals() != 0) {
    if (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt) != 0) {
      PyErr_Clear();
    } else {
      PyErr_WriteUnraisable(nullptr);  // another signal handler's error
    }
  }
}

interrupter::report_scope::report_scope(interrupter& owner, bool ends_window) : m_owner(owner) {
  {
    std::lock_guard lock(m_owner.m_mutex);
    ++m_owner.m_reports;
    if (ends_window) {
      m_owner.m_ended_depth = m_owner.m_depth;
    }
    m_owner.publish_may_trip();
  }
  // An interrupt that tripped the handler before the report began is held
  // back too, rather than raised inside the report.
  if (PyErr_CheckSignals() != 0) {
    if (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt) != 0) {
      PyErr_Clear();
      std::lock_guard lock(m_owner.m_mutex);
      m_owner.m_held = m_owner.m_depth > 0;
    } else {
      PyErr_WriteUnraisable(nullptr);  // another signal handler's error
    }
  }
}

interrupter::report_scope::~report_scope() {
  std::lock_guard lock(m_owner.m_mutex);
  --m_owner.m_reports;
  m_owner.publish_may_trip();
  if (m_owner.holding() || !m_owner.m_held) {
    return;
  }
  m_owner.m_held = false;
  PyErr_SetInterrupt();
}

bool interrupter::holding() const noexcept {
  return m_depth > 0 && (m_reports > 0 || m_ended_depth == m_depth);
}

void interrupter::publish_may_trip() noexcept {
  m_may_trip.store(m_depth > 0 && !holding() && !m_waiting);
}

bool interrupter::trip_from_signal_handler() noexcept {
  if (!m_may_trip.load()) {
    return false;
  }
  PyErr_SetInterrupt();  // async-signal-safe
  return true;
}

interrupter::request_guard::~request_guard() {
  {
    std::lock_guard lock(m_owner.m_mutex);
    if (m_owner.m_depth == 0) {
      return;
    }
    m_owner.m_depth = 1;
  }
  m_owner.close();
}

interrupter::execution::execution(interrupter& owner) : m_owner(owner) {
  std::lock_guard lock(m_owner.m_mutex);
  m_owner.m_executing = true;
  m_owner.m_kept = false;
}

interrupter::execution::~execution() {
  std::lock_guard lock(m_owner.m_mutex);
  m_owner.m_executing = false;
  m_owner.m_kept = false;
}

interrupter::cancellable_wait::cancellable_wait(interrupter& owner, kept_interrupt kept)
    : m_owner(owner) {
  std::lock_guard lock(m_owner.m_mutex);
  m_owner.m_waiting = true;
  m_owner.publish_may_trip();
  m_owner.m_cancel.drain();  // an interrupt of an earlier wait
  m_owner.m_wait_cancelled = false;
  if (m_owner.m_kept && kept == kept_interrupt::ends_it) {
    m_owner.m_kept = false;
    m_owner.m_wait_cancelled = true;
    m_owner.m_cancel.notify();
  }
  if (m_owner.m_stopping) {
    m_owner.m_wait_cancelled = true;
    m_owner.m_cancel.notify();
  }
}

interrupter::cancellable_wait::~cancellable_wait() {
  if (!m_ended) {
    end();
  }
}

bool interrupter::cancellable_wait::end() {
  std::lock_guard lock(m_owner.m_mutex);
  m_ended = true;
  m_owner.m_waiting = false;
  m_owner.publish_may_trip();
  m_owner.m_cancel.drain();
  const bool cancelled = m_owner.m_wait_cancelled;
  m_owner.m_wait_cancelled = false;
  return cancelled;
}

void interrupter::stop() {
  {
    std::lock_guard lock(m_mutex);
    m_stopping = true;
  }
  interrupt();
}

bool interrupter::stopping() {
  std::lock_guard lock(m_mutex);
  return m_stopping;
}

bool interrupter::interrupt() {
  std::lock_guard lock(m_mutex);
  const bool in_window = m_depth > 0;
  if (holding()) {
    m_held = true;  // see report_scope
    return true;
  }
  if (in_window) {
    // Async-signal-safe and GIL-free. If the user's code replaced SIGINT's
    // handler, this calls theirs; if it ignores SIGINT, this does nothing.
    // Before the wait ends: the waiter then finds the handler tripped.
    PyErr_SetInterrupt();
  }
  if (m_waiting) {
    m_wait_cancelled = true;
    m_cancel.notify();
  }
  if (in_window) {
    pthread_kill(m_main_thread, wake_signal());
  }
  if (!in_window && !m_waiting && m_executing) {
    m_kept = true;  // see execution
    return true;
  }
  return in_window || m_waiting;
}

}  // namespace interp_rpc::kernel
