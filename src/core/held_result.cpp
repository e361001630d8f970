#include "core/held_result.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <new>

namespace interp_rpc::core {

namespace {

// Below this, a copy costs less than remapping pages (and the page-table
// and TLB work that comes with it).
constexpr std::size_t move_threshold = 4u << 20;

std::atomic<std::uint64_t> moved_pages{0};

// Fills dst with src's n bytes. When src may be emptied (the caller owns it
// alone and drops it next) and both sit at the same offset in their pages,
// the whole pages in between are moved, not copied: src's become empty
// (they read as zeros), dst's take their place.
void move_or_copy(char* dst, char* src, std::size_t n, bool src_may_be_emptied,
                  shared_copy& copier) {
  static const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const auto src_at = reinterpret_cast<std::uintptr_t>(src);
  const auto dst_at = reinterpret_cast<std::uintptr_t>(dst);
  if (src_may_be_emptied && n >= move_threshold && src_at % page == dst_at % page) {
    const std::size_t head = (page - src_at % page) % page;
    const std::size_t middle = (n - head) / page * page;
    void* moved = mremap(src + head, middle, middle,
                         MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, dst + head);
    if (moved != MAP_FAILED) {
      std::memcpy(dst, src, head);
      std::memcpy(dst + head + middle, src + head + middle, n - head - middle);
      moved_pages.fetch_add(middle / page, std::memory_order_relaxed);
      return;
    }
  }
  copier.copy(dst, src, n);
}

const char* type_name(held_result::value_type type) {
  switch (type) {
    case held_result::value_type::bytes: return "bytes";
    case held_result::value_type::bytearray: return "bytearray";
    case held_result::value_type::str: return "str";
  }
  return "value";
}

}  // namespace

std::uint64_t held_result::pages_moved() noexcept {
  return moved_pages.load(std::memory_order_relaxed);
}

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
    } else if (PyByteArray_CheckExact(value)) {
      p.type = value_type::bytearray;
      p.data = PyByteArray_AS_STRING(value);
      p.length = PyByteArray_GET_SIZE(value);
    } else if (PyUnicode_CheckExact(value)) {
      p.type = value_type::str;
      p.data = PyUnicode_DATA(value);
      p.length = PyUnicode_GET_LENGTH(value);
      p.kind = static_cast<int>(PyUnicode_KIND(value));
      p.max_char = PyUnicode_MAX_CHAR_VALUE(value);
    } else {
      PyErr_Format(PyExc_TypeError, "a reply can hold bytes, bytearray and str only, not %s",
                   Py_TYPE(value)->tp_name);
      return false;
    }
    m_pieces.push_back(std::move(p));
    m_objects.push_back(Py_NewRef(value));
  }
  return true;
}

bool held_result::worth_helping() {
  std::lock_guard lock(m_mutex);
  return std::any_of(m_pieces.begin(), m_pieces.end(), [](const piece& p) {
    return static_cast<std::size_t>(p.length) * static_cast<std::size_t>(p.kind) >=
           shared_copy_threshold;
  });
}

bool held_result::keep_copy(piece& p) noexcept {
  const auto size = static_cast<std::size_t>(p.length) * static_cast<std::size_t>(p.kind);
  try {
    p.kept.assign(static_cast<const char*>(p.data), size);
  } catch (const std::bad_alloc&) {
    return false;
  }
  p.data = p.kept.data();
  return true;
}

void held_result::mark_sole_owner() {
  std::lock_guard lock(m_mutex);
  for (std::size_t i = 0; i < m_pieces.size(); ++i) {
    piece& p = m_pieces[i];
    p.movable = Py_REFCNT(m_objects[i]) == 1;
    // Reachable from the worker's code, which runs on before the caller
    // reads: it may write into the bytearray, or resize it (and free the
    // memory read here).
    if (p.type == value_type::bytearray && !p.movable && !keep_copy(p)) {
      m_lost = "out of memory: the worker could not copy aside a bytearray result that its "
               "code can still change";
    }
  }
}

PyObject* held_result::copy_out() {
  PyObject* values = copy_out_locked();
  m_copy.finish();
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
  if (m_lost != nullptr) {
    PyErr_SetString(PyExc_MemoryError, m_lost);
    return nullptr;
  }
  PyObject* values = PyList_New(static_cast<Py_ssize_t>(m_pieces.size()));
  if (values == nullptr) return nullptr;
  for (std::size_t i = 0; i < m_pieces.size(); ++i) {
    const piece& p = m_pieces[i];
    PyObject* value = nullptr;
    // The worker's memory, unless it ended first and this is our own copy.
    char* source = const_cast<char*>(static_cast<const char*>(p.data));
    const bool may_empty = p.movable && p.kept.empty();
    const auto size = static_cast<std::size_t>(p.length) * static_cast<std::size_t>(p.kind);
    switch (p.type) {
      case value_type::bytes:
        value = PyBytes_FromStringAndSize(nullptr, p.length);
        if (value != nullptr) move_or_copy(PyBytes_AS_STRING(value), source, size, may_empty, m_copy);
        break;
      case value_type::bytearray:
        value = PyByteArray_FromStringAndSize(nullptr, p.length);
        if (value != nullptr) move_or_copy(PyByteArray_AS_STRING(value), source, size, may_empty, m_copy);
        break;
      case value_type::str:
        // Same largest code point, so the same kind: the code units copy as is.
        value = PyUnicode_New(p.length, p.max_char);
        if (value != nullptr) {
          move_or_copy(static_cast<char*>(PyUnicode_DATA(value)), source, size, may_empty, m_copy);
        }
        break;
    }
    if (value == nullptr) {
      Py_DECREF(values);
      if (PyErr_ExceptionMatches(PyExc_MemoryError)) {
        PyErr_Clear();
        PyErr_Format(PyExc_MemoryError,
                     "out of memory: could not copy the worker's %zd-byte %s result into "
                     "this interpreter",
                     p.length * static_cast<Py_ssize_t>(p.kind), type_name(p.type));
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
  m_copy.finish();
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
    for (piece& p : m_pieces) {
      if (p.kept.empty() && p.length != 0 && !keep_copy(p)) {
        m_lost = "the worker ended before its result was read, and had no memory to keep it";
        break;
      }
    }
  }
  release_objects();
}

void held_result::release_objects() {
  for (PyObject* object : m_objects) Py_DECREF(object);
  m_objects.clear();
}

}  // namespace interp_rpc::core
