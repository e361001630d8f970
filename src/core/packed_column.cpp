#include "core/packed_column.hpp"

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/python_ref.hpp"

namespace interp_rpc::core {

namespace {

// Separators tried in turn for a str or bytes column: control characters,
// rare in text, that keep a latin-1 str in one byte per character.
constexpr Py_UCS4 str_separators[] = {0x00, 0x1f, 0x1e};
constexpr char bytes_separators[] = {'\x00', '\x1f', '\xff'};

PyObject* none() { Py_RETURN_NONE; }

// Whether an object occurs twice. The empty str and bytes, and one-character
// latin-1 str, are the interpreter's shared singletons, which pickle and
// split both give back as such: their repeats change nothing, and the
// callers do not ask about them. One-byte bytes differ (see pack_bytes).
class repeat_finder {
 public:
  explicit repeat_finder(Py_ssize_t n) : m_slots(std::bit_ceil(static_cast<std::size_t>(n) * 2)) {}

  // False if `item` was seen already.
  bool first_time(PyObject* item) {
    const std::size_t mask = m_slots.size() - 1;
    auto slot = (reinterpret_cast<std::uintptr_t>(item) >> 4) * 0x9E3779B97F4A7C15u;
    for (std::size_t i = static_cast<std::size_t>(slot >> 32) & mask;; i = (i + 1) & mask) {
      if (m_slots[i] == nullptr) {
        m_slots[i] = item;
        return true;
      }
      if (m_slots[i] == item) return false;
    }
  }

 private:
  std::vector<PyObject*> m_slots;
};

PyObject* column(column_kind kind, py_ref payload, PyObject* separator) {
  if (!payload) return nullptr;
  return Py_BuildValue("(iNO)", static_cast<int>(kind), payload.release(), separator);
}

PyObject* pack_int64(PyObject* const* items, Py_ssize_t n) {
  py_ref payload = py_ref::steal(PyBytes_FromStringAndSize(nullptr, n * 8));
  if (!payload) return nullptr;
  char* out = PyBytes_AS_STRING(payload.get());
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (!PyLong_CheckExact(items[i])) return none();
    int overflow = 0;
    const long long value = PyLong_AsLongLongAndOverflow(items[i], &overflow);
    if (overflow != 0) return none();
    const auto exact = static_cast<std::int64_t>(value);
    std::memcpy(out + i * 8, &exact, 8);
  }
  return column(column_kind::int64, std::move(payload), Py_None);
}

PyObject* pack_float64(PyObject* const* items, Py_ssize_t n) {
  py_ref payload = py_ref::steal(PyBytes_FromStringAndSize(nullptr, n * 8));
  if (!payload) return nullptr;
  char* out = PyBytes_AS_STRING(payload.get());
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (!PyFloat_CheckExact(items[i])) return none();
    const double value = PyFloat_AS_DOUBLE(items[i]);
    std::memcpy(out + i * 8, &value, 8);
  }
  return column(column_kind::float64, std::move(payload), Py_None);
}

// The first separator in `candidates` that no item contains, or -1.
template <typename Contains, typename Separator, std::size_t N>
int free_separator(PyObject* const* items, Py_ssize_t n, const Separator (&candidates)[N],
                   Contains contains) {
  for (std::size_t c = 0; c < N; ++c) {
    bool free = true;
    for (Py_ssize_t i = 0; free && i < n; ++i) free = !contains(items[i], candidates[c]);
    if (free) return static_cast<int>(c);
  }
  return -1;
}

PyObject* pack_str(PyObject* values, PyObject* const* items, Py_ssize_t n, Py_ssize_t max_item) {
  repeat_finder repeats(n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (!PyUnicode_CheckExact(items[i])) return none();
    const Py_ssize_t length = PyUnicode_GET_LENGTH(items[i]);
    const bool shared = length == 0 || (length == 1 && PyUnicode_READ_CHAR(items[i], 0) < 256);
    if (length >= max_item || (!shared && !repeats.first_time(items[i]))) return none();
  }
  const int chosen = free_separator(items, n, str_separators, [](PyObject* item, Py_UCS4 sep) {
    return PyUnicode_FindChar(item, sep, 0, PyUnicode_GET_LENGTH(item), 1) != -1;
  });
  if (chosen < 0) return none();
  py_ref separator = py_ref::steal(PyUnicode_FromOrdinal(static_cast<int>(str_separators[chosen])));
  if (!separator) return nullptr;
  py_ref joined = py_ref::steal(PyUnicode_Join(separator.get(), values));
  return column(column_kind::str, std::move(joined), separator.get());
}

PyObject* pack_bytes(PyObject* const* items, Py_ssize_t n, Py_ssize_t max_item) {
  repeat_finder repeats(n);
  // Split gives back a one-byte item as the interpreter's shared object for
  // that byte, while pickle gives each one an object of its own (it reads
  // into a new one), or one object for an object met twice. The two agree
  // only while each byte value occurs once as a one-byte item.
  std::array<bool, 256> one_byte_seen{};
  Py_ssize_t total = n - 1;  // the separators
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (!PyBytes_CheckExact(items[i])) return none();
    const Py_ssize_t length = PyBytes_GET_SIZE(items[i]);
    if (length >= max_item) return none();
    if (length == 1) {
      bool& seen = one_byte_seen[static_cast<unsigned char>(PyBytes_AS_STRING(items[i])[0])];
      if (seen) return none();
      seen = true;
    } else if (length >= 2 && !repeats.first_time(items[i])) {
      return none();
    }
    total += length;
  }
  const int chosen = free_separator(items, n, bytes_separators, [](PyObject* item, char sep) {
    return std::memchr(PyBytes_AS_STRING(item), sep, static_cast<std::size_t>(PyBytes_GET_SIZE(item))) !=
           nullptr;
  });
  if (chosen < 0) return none();
  const char sep = bytes_separators[chosen];
  py_ref payload = py_ref::steal(PyBytes_FromStringAndSize(nullptr, total));
  if (!payload) return nullptr;
  char* out = PyBytes_AS_STRING(payload.get());
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (i > 0) *out++ = sep;
    const auto length = static_cast<std::size_t>(PyBytes_GET_SIZE(items[i]));
    std::memcpy(out, PyBytes_AS_STRING(items[i]), length);
    out += length;
  }
  py_ref separator = py_ref::steal(PyBytes_FromStringAndSize(&sep, 1));
  if (!separator) return nullptr;
  return column(column_kind::bytes, std::move(payload), separator.get());
}

PyObject* pack_column_call(PyObject* /*module*/, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "pack_column(values, max_item) takes 2 arguments");
    return nullptr;
  }
  const Py_ssize_t max_item = PyLong_AsSsize_t(args[1]);
  if (max_item == -1 && PyErr_Occurred()) return nullptr;
  return pack_column(args[0], max_item);
}

PyMethodDef pack_column_def = {
    "pack_column", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&pack_column_call)),
    METH_FASTCALL,
    "pack_column(values, max_item) -> (kind, payload, separator) or None: a list or tuple of "
    "one scalar type as one column (core/packed_column.hpp)."};

}  // namespace

PyObject* pack_column(PyObject* values, Py_ssize_t max_item) {
  if (!PyList_CheckExact(values) && !PyTuple_CheckExact(values)) return none();
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(values);
  if (n == 0) return none();
  PyObject* const* items = PySequence_Fast_ITEMS(values);
  PyTypeObject* type = Py_TYPE(items[0]);
  if (type == &PyLong_Type) return pack_int64(items, n);
  if (type == &PyFloat_Type) return pack_float64(items, n);
  if (type == &PyUnicode_Type) return pack_str(values, items, n, max_item);
  if (type == &PyBytes_Type) return pack_bytes(items, n, max_item);
  return none();
}

PyObject* new_pack_column_function() { return PyCFunction_New(&pack_column_def, nullptr); }

}  // namespace interp_rpc::core
