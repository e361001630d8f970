#include "kernel/sigint_relay.hpp"

#include <poll.h>
#include <unistd.h>

#include <Python.h>

#include <atomic>
#include <cerrno>
#include <stdexcept>

#include <pybind11/pybind11.h>

#include "core/thread_start.hpp"

namespace py = pybind11;

namespace interp_rpc::kernel {

namespace {

// What the handler reads. Set before the handler is installed and cleared
// after it is removed; the process has one relay.
std::atomic<interrupter*> g_target{nullptr};
std::atomic<wake_pipe*> g_received{nullptr};
pid_t g_main_thread = 0;

void on_sigint(int) {
  const int saved_errno = errno;
  interrupter* target = g_target.load();
  wake_pipe* received = g_received.load();
  if (target != nullptr && received != nullptr) {
    // gettid() is a plain system call, hence async-signal-safe.
    if (gettid() != g_main_thread || !target->trip_from_signal_handler()) {
      received->notify();  // write(2): async-signal-safe
    }
  }
  errno = saved_errno;
}

struct sigaction kernel_action() {
  struct sigaction action {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: the interrupted call fails with EINTR
  return action;
}

}  // namespace

sigint_relay::sigint_relay(interrupter& target) : m_target(target) {
  if (g_target.load() != nullptr) {
    throw std::logic_error("a process has one sigint_relay");
  }
  // The relay is one of the kernel's own threads: it inherits the blocked
  // SIGINT of the main thread at startup. It starts before the handler is
  // installed: a thread that cannot start then leaves Python's handler, and
  // no pointer to this object, behind.
  m_thread = core::start_thread("the kernel's interrupt relay thread", [this] { relay(); });
  g_main_thread = gettid();
  g_received.store(&m_received);
  g_target.store(&m_target);
  const struct sigaction action = kernel_action();
  if (sigaction(SIGINT, &action, &m_python_action) != 0) {
    g_target.store(nullptr);
    g_received.store(nullptr);
    m_stop.notify();
    m_thread.join();
    throw std::runtime_error("cannot install the kernel's SIGINT handler");
  }
}

sigint_relay::~sigint_relay() {
  struct sigaction current {};
  sigaction(SIGINT, nullptr, &current);
  if (current.sa_handler == on_sigint) {
    sigaction(SIGINT, &m_python_action, nullptr);
  }
  g_target.store(nullptr);
  g_received.store(nullptr);
  m_stop.notify();
  m_thread.join();
}

void sigint_relay::restore() {
  struct sigaction current {};
  if (sigaction(SIGINT, nullptr, &current) == 0 && current.sa_handler == on_sigint) {
    // Python's handler is still default_int_handler: only signal.signal()
    // changes it, and that also replaces the C handler.
    return;
  }
  const py::module_ signal = py::module_::import("signal");
  signal.attr("signal")(SIGINT, signal.attr("default_int_handler"));
  const struct sigaction action = kernel_action();
  sigaction(SIGINT, &action, nullptr);
}

void sigint_relay::relay() {
  pollfd fds[] = {{m_received.fd(), POLLIN, 0}, {m_stop.fd(), POLLIN, 0}};
  while (true) {
    if (::poll(fds, 2, -1) < 0) {
      continue;  // EINTR
    }
    if ((fds[1].revents & POLLIN) != 0) {
      return;
    }
    if ((fds[0].revents & POLLIN) != 0) {
      // SIGINTs that came together are one interrupt, as CPython's trips are.
      m_received.drain();
      m_target.interrupt();
    }
  }
}

}  // namespace interp_rpc::kernel
