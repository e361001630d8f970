// Owning references and GIL / thread-state transitions as RAII types.
//
// The engine uses the raw C API only: its worker threads live in
// subinterpreters, where pybind11's per-interpreter state must not be touched.
#pragma once

#include <Python.h>

#include <utility>

namespace interp_rpc::core {

// An owned strong reference. It must be destroyed with the GIL of the
// interpreter that owns the object held.
class py_ref {
 public:
  py_ref() noexcept = default;
  static py_ref steal(PyObject* o) noexcept { return py_ref(o); }
  static py_ref borrow(PyObject* o) noexcept {
    Py_XINCREF(o);
    return py_ref(o);
  }
  py_ref(const py_ref&) = delete;
  py_ref& operator=(const py_ref&) = delete;
  py_ref(py_ref&& other) noexcept : m_obj(std::exchange(other.m_obj, nullptr)) {}
  py_ref& operator=(py_ref&& other) noexcept {
    if (this != &other) {
      Py_XDECREF(m_obj);
      m_obj = std::exchange(other.m_obj, nullptr);
    }
    return *this;
  }
  ~py_ref() { Py_XDECREF(m_obj); }

  PyObject* get() const noexcept { return m_obj; }
  PyObject* release() noexcept { return std::exchange(m_obj, nullptr); }
  explicit operator bool() const noexcept { return m_obj != nullptr; }

 private:
  explicit py_ref(PyObject* o) noexcept : m_obj(o) {}
  PyObject* m_obj = nullptr;
};

// Detaches the current thread state (releasing its GIL) for the lifetime of
// the object, and re-attaches it on destruction.
class gil_released {
 public:
  gil_released() noexcept : m_state(PyEval_SaveThread()) {}
  gil_released(const gil_released&) = delete;
  gil_released& operator=(const gil_released&) = delete;
  ~gil_released() { PyEval_RestoreThread(m_state); }

 private:
  PyThreadState* m_state;
};

// Attaches an existing thread state (taking its interpreter's GIL) for the
// lifetime of the object, and detaches it again on destruction.
class thread_state_attached {
 public:
  explicit thread_state_attached(PyThreadState* state) noexcept : m_state(state) {
    PyEval_RestoreThread(m_state);
  }
  thread_state_attached(const thread_state_attached&) = delete;
  thread_state_attached& operator=(const thread_state_attached&) = delete;
  ~thread_state_attached() { PyEval_SaveThread(); }

 private:
  PyThreadState* m_state;
};

}  // namespace interp_rpc::core
