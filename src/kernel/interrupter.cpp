#include "kernel/interrupter.hpp"

#include <Python.h>

#include <chrono>
#include <csignal>
#include <ctime>
#include <thread>

namespace interp_rpc::kernel {

namespace {

void set_sigint_blocked(bool blocked) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  pthread_sigmask(blocked ? SIG_BLOCK : SIG_UNBLOCK, &set, nullptr);
}

// A SIGINT sent to this thread that is still pending (sent just before the
// window closed): take it, so that unblocking SIGINT later does not deliver it.
void consume_pending_sigint() {
  sigset_t pending;
  sigpending(&pending);
  if (sigismember(&pending, SIGINT) == 1) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    const timespec no_wait{0, 0};
    sigtimedwait(&set, nullptr, &no_wait);
  }
}

// Sending SIGINT is only safe while the process handles it: with SIG_DFL it
// would kill the kernel, and with SIG_IGN it is pointless.
bool sigint_is_handled() {
  struct sigaction current {};
  sigaction(SIGINT, nullptr, &current);
  if ((current.sa_flags & SA_SIGINFO) != 0) {
    return true;
  }
  return current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN;
}

}  // namespace

void block_sigint_in_this_thread() { set_sigint_blocked(true); }

interrupter::interrupter() : m_main_thread(pthread_self()) {}

void interrupter::open() {
  std::lock_guard lock(m_mutex);
  if (m_depth++ == 0) {
    set_sigint_blocked(false);
  }
  if (m_stopping) {
    PyErr_SetInterrupt();
  }
}

void interrupter::close() {
  {
    std::lock_guard lock(m_mutex);
    if (m_depth == 0 || --m_depth > 0) {
      return;
    }
    set_sigint_blocked(true);
    consume_pending_sigint();
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

interrupter::input_wait::input_wait(interrupter& owner) : m_owner(owner) {
  std::lock_guard lock(m_owner.m_mutex);
  m_owner.m_waiting_for_input = true;
  ++m_owner.m_input_waits;
}

interrupter::input_wait::~input_wait() {
  std::lock_guard lock(m_owner.m_mutex);
  m_owner.m_waiting_for_input = false;
  // A repeated SIGINT may still be pending: take it now, so that it does not
  // interrupt the code that handles the first one. The interrupt itself is
  // not lost: PyErr_SetInterrupt tripped the handler.
  set_sigint_blocked(true);
  consume_pending_sigint();
  set_sigint_blocked(m_owner.m_depth == 0);
}

void interrupter::stop() {
  {
    std::lock_guard lock(m_mutex);
    m_stopping = true;
  }
  interrupt();
}

bool interrupter::interrupt() {
  std::unique_lock lock(m_mutex);
  if (m_depth == 0) {
    return false;
  }
  // Async-signal-safe and GIL-free: trips the handler even if the signal
  // below is delayed or the user installed a handler of their own.
  PyErr_SetInterrupt();
  if (!sigint_is_handled()) {
    return true;
  }
  pthread_kill(m_main_thread, SIGINT);
  // See input_wait. A few milliseconds at most: the first signal that finds
  // the receive running ends the wait.
  const unsigned wait = m_input_waits;
  for (int attempt = 0; attempt < 200 && m_waiting_for_input && m_input_waits == wait;
       ++attempt) {
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    lock.lock();
    if (m_waiting_for_input && m_input_waits == wait) {
      pthread_kill(m_main_thread, SIGINT);
    }
  }
  return true;
}

}  // namespace interp_rpc::kernel
