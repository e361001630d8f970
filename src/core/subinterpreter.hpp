// The two thread-state transitions a worker thread lives between, as RAII.
//
//   main_thread_state   a thread state of the main interpreter for this OS
//                       thread: creating an interpreter needs one attached,
//                       and ending the worker needs it again to clean up.
//   own_subinterpreter  an isolated interpreter with its own GIL, created on
//                       this thread and left attached to it.
//
// Construct them in that order and they unwind in the reverse order:
// Py_EndInterpreter first, then the main thread state is re-attached, cleared
// and deleted. Both steps need the main GIL, so whoever joins a worker must
// not hold it.
#pragma once

#include <Python.h>

#include <cstdint>
#include <string>

namespace interp_rpc::core {

class main_thread_state {
 public:
  explicit main_thread_state(PyInterpreterState* main_interp);
  main_thread_state(const main_thread_state&) = delete;
  main_thread_state& operator=(const main_thread_state&) = delete;
  ~main_thread_state();

  PyThreadState* get() const noexcept { return m_state; }
  // Called when another thread state took over this thread (the new
  // interpreter's), so the destructor knows to re-attach first.
  void mark_detached() noexcept { m_attached = false; }

 private:
  PyThreadState* m_state;
  bool m_attached = true;
};

// Attaches this thread to another thread's interpreter for a moment, with a
// fresh thread state (taking that interpreter's GIL), then deletes the state.
// The thread must have no thread state attached.
class thread_state_visit {
 public:
  explicit thread_state_visit(PyInterpreterState* interp) : m_state(PyThreadState_New(interp)) {
    PyEval_RestoreThread(m_state);
  }
  thread_state_visit(const thread_state_visit&) = delete;
  thread_state_visit& operator=(const thread_state_visit&) = delete;
  ~thread_state_visit() {
    PyThreadState_Clear(m_state);
    PyThreadState_DeleteCurrent();
  }

 private:
  PyThreadState* m_state;
};

class own_subinterpreter {
 public:
  // Requires `main` to be attached. On failure, `error()` says why and this
  // thread is attached to no interpreter, or to `main` again (its destructor
  // handles both). `injected_failure` (the fault tests, fault_injection.hpp)
  // makes CPython refuse to create it.
  explicit own_subinterpreter(main_thread_state& main, bool injected_failure = false);
  own_subinterpreter(const own_subinterpreter&) = delete;
  own_subinterpreter& operator=(const own_subinterpreter&) = delete;
  ~own_subinterpreter();

  bool ok() const noexcept { return m_state != nullptr; }
  const std::string& error() const noexcept { return m_error; }
  PyThreadState* thread_state() const noexcept { return m_state; }
  std::int64_t id() const noexcept { return m_id; }

 private:
  PyThreadState* m_state = nullptr;
  std::int64_t m_id = -1;
  std::string m_error;
};

}  // namespace interp_rpc::core
