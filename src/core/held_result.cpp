#include "core/held_result.hpp"

#include <cstring>
#include <new>

namespace interp_rpc::core {

bool held_result::hold(PyObject* values) {
  if (!PyList_Check(values)) {
    PyErr_SetString(PyExc_TypeError, "the values a reply holds must be a list");
    return false;
  }
  const Py_ssize_t n = PyList_GET_SIZE(values);
  std::lock_guard lock(m_mutex);
  m_pieces.reserve(static_cast<std::size_t>(n));
  m_objects.reserve(static_cast<std::size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* value = PyList_GET_ITEM(values, i);
    piece p;
    if (PyBytes_CheckExact(value)) {
      p.data = PyBytes_AS_STRING(value);
      p.length = PyBytes_GET_SIZE(value);
    } else if (PyUnicode_CheckExact(value)) {
      p.is_str = true;
      p.data = PyUnicode_DATA(value);
      p.length = PyUnicode_GET_LENGTH(value);
      p.kind = static_cast<int>(PyUnicode_KIND(value));
      p.max_char = PyUnicode_MAX_CHAR_VALUE(value);
    } else {
      PyErr_Format(PyExc_TypeError, "a reply can hold bytes and str only, not %s",
                   Py_TYPE(value)->tp_name);
      return false;
    }
    m_pieces.push_back(std::move(p));
    m_objects.push_back(Py_NewRef(value));
  }
  return true;
}

PyObject* held_result::copy_out() {
  PyObject* values = copy_out_locked();
  if (m_when_done) m_when_done();
  return values;
}

PyObject* held_result::copy_out_locked() {
  std::lock_guard lock(m_mutex);
  if (m_done) {
    // The worker may have let go of them since.
    PyErr_SetString(PyExc_RuntimeError, "this reply's values were read already");
    return nullptr;
  }
  m_done = true;
  if (m_lost) {
    PyErr_SetString(PyExc_MemoryError,
                    "the worker ended before its result was read, and had no memory to keep it");
    return nullptr;
  }
  PyObject* values = PyList_New(static_cast<Py_ssize_t>(m_pieces.size()));
  if (values == nullptr) return nullptr;
  for (std::size_t i = 0; i < m_pieces.size(); ++i) {
    const piece& p = m_pieces[i];
    PyObject* value = nullptr;
    if (!p.is_str) {
      value = PyBytes_FromStringAndSize(static_cast<const char*>(p.data), p.length);
    } else {
      value = PyUnicode_New(p.length, p.max_char);
      if (value != nullptr) {
        // Same largest code point, so the same kind: the code units copy as is.
        std::memcpy(PyUnicode_DATA(value), p.data,
                    static_cast<std::size_t>(p.length) * static_cast<std::size_t>(p.kind));
      }
    }
    if (value == nullptr) {
      Py_DECREF(values);
      if (PyErr_ExceptionMatches(PyExc_MemoryError)) {
        PyErr_Clear();
        PyErr_Format(PyExc_MemoryError,
                     "out of memory: could not copy the worker's %zd-byte %s result into "
                     "this interpreter",
                     p.length * static_cast<Py_ssize_t>(p.kind), p.is_str ? "str" : "bytes");
      }
      return nullptr;
    }
    PyList_SET_ITEM(values, static_cast<Py_ssize_t>(i), value);
  }
  return values;
}

void held_result::abandon() noexcept {
  {
    std::lock_guard lock(m_mutex);
    m_done = true;
  }
  try {
    if (m_when_done) m_when_done();
  } catch (...) {
    // Only a wake-up: the worker releases the values at its next call.
  }
}

bool held_result::release_if_done() {
  std::lock_guard lock(m_mutex);
  if (!m_done) return false;
  release_objects();
  return true;
}

void held_result::detach() {
  std::lock_guard lock(m_mutex);
  if (!m_done) {
    try {
      for (piece& p : m_pieces) {
        const auto size = static_cast<std::size_t>(p.length) * static_cast<std::size_t>(p.kind);
        p.kept.assign(static_cast<const char*>(p.data), size);
        p.data = p.kept.data();
      }
    } catch (const std::bad_alloc&) {
      m_lost = true;
    }
  }
  release_objects();
}

void held_result::release_objects() {
  for (PyObject* object : m_objects) Py_DECREF(object);
  m_objects.clear();
}

}  // namespace interp_rpc::core
