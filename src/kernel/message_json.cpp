#include "kernel/message_json.hpp"

#include <cmath>
#include <string_view>
#include <utility>
#include <vector>

#include <openssl/evp.h>

#include <Python.h>
#include <datetime.h>

namespace py = pybind11;

namespace interp_rpc::kernel {

namespace {

// As deep as wire_message lets a received message nest.
constexpr std::size_t max_depth = 256;
constexpr const char* replacement_character = "\xEF\xBF\xBD";  // U+FFFD

void append_utf8(std::string& out, Py_UCS4 c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

bool is_surrogate(Py_UCS4 c) { return c >= 0xD800 && c <= 0xDFFF; }

void ensure_datetime_api() {
  if (PyDateTimeAPI == nullptr) {
    PyDateTime_IMPORT;
    if (PyDateTimeAPI == nullptr) throw py::error_already_set();
  }
}

std::string base64(const py::bytes& data) {
  char* bytes = nullptr;
  Py_ssize_t size = 0;
  PyBytes_AsStringAndSize(data.ptr(), &bytes, &size);
  std::string encoded(static_cast<std::size_t>(4 * ((size + 2) / 3)), '\0');
  const int written = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(encoded.data()),
                                      reinterpret_cast<const unsigned char*>(bytes),
                                      static_cast<int>(size));
  encoded.resize(static_cast<std::size_t>(written));
  return encoded;
}

bool isinstance_of(const py::handle& value, const char* module, const char* name) {
  const py::object type = py::module_::import(module).attr(name);
  const int result = PyObject_IsInstance(value.ptr(), type.ptr());
  if (result < 0) {
    throw py::error_already_set();
  }
  return result == 1;
}

std::string type_name(const py::handle& value) {
  return py::str(py::type::handle_of(value).attr("__qualname__")).cast<std::string>();
}

class converter {
 public:
  explicit converter(const char* root) : m_root(root) {}

  nl::json convert(const py::handle& value) {
    if (m_path.size() > max_depth) {
      fail("it nests deeper than " + std::to_string(max_depth) +
           " levels (does a container hold itself?)");
    }
    if (value.is_none()) return nullptr;
    if (PyBool_Check(value.ptr())) return value.ptr() == Py_True;
    if (PyLong_Check(value.ptr())) return integer(value);
    if (PyFloat_Check(value.ptr())) return real(PyFloat_AS_DOUBLE(value.ptr()));
    if (PyUnicode_Check(value.ptr())) return to_utf8(value);
    if (PyDict_Check(value.ptr())) return object(py::reinterpret_borrow<py::dict>(value));
    if (PyList_Check(value.ptr()) || PyTuple_Check(value.ptr())) return array(value);
    if (PyBytes_Check(value.ptr())) return base64(py::reinterpret_borrow<py::bytes>(value));
    return other(value);
  }

 private:
  nl::json integer(const py::handle& value) {
    int overflow = 0;
    const long long number = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    if (overflow == 0) {
      if (number == -1 && PyErr_Occurred() != nullptr) throw py::error_already_set();
      return number;
    }
    if (overflow > 0) {
      const unsigned long long positive = PyLong_AsUnsignedLongLong(value.ptr());
      if (!(positive == static_cast<unsigned long long>(-1) && PyErr_Occurred() != nullptr)) {
        return positive;
      }
      PyErr_Clear();
    }
    fail("the integer " + py::repr(value).cast<std::string>() +
         " does not fit in 64 bits");
  }

  static nl::json real(double number) {
    // As ipykernel: JSON has no NaN or infinity, so their reprs.
    if (std::isnan(number)) return "nan";
    if (std::isinf(number)) return number > 0 ? "inf" : "-inf";
    return number;
  }

  nl::json array(const py::handle& sequence) {
    nl::json result = nl::json::array();
    std::size_t index = 0;
    for (const py::handle item : sequence) {
      m_path.push_back("[" + std::to_string(index++) + "]");
      result.push_back(convert(item));
      m_path.pop_back();
    }
    return result;
  }

  nl::json object(const py::handle& mapping) {
    nl::json result = nl::json::object();
    const py::object items =
        PyDict_Check(mapping.ptr()) ? py::reinterpret_borrow<py::dict>(mapping).attr("items")()
                                    : mapping.attr("items")();
    for (const py::handle item : items) {
      const py::tuple pair = py::reinterpret_borrow<py::tuple>(item);
      std::string key = key_text(pair[0]);
      m_path.push_back("[" + py::repr(pair[0]).cast<std::string>() + "]");
      if (result.contains(key)) {
        fail("its key is " + py::repr(py::str(key)).cast<std::string>() +
             " in JSON, as another key's is: a value would be lost");
      }
      result[std::move(key)] = convert(pair[1]);
      m_path.pop_back();
    }
    return result;
  }

  // A key as json.dumps writes it, str() for types it refuses.
  static std::string key_text(const py::handle& key) {
    if (PyUnicode_Check(key.ptr())) return to_utf8(key);
    if (key.is_none()) return "null";
    if (PyBool_Check(key.ptr())) return key.ptr() == Py_True ? "true" : "false";
    if (PyLong_Check(key.ptr())) return py::str(key).cast<std::string>();
    if (PyFloat_Check(key.ptr())) {
      const double number = PyFloat_AS_DOUBLE(key.ptr());
      if (std::isnan(number)) return "NaN";
      if (std::isinf(number)) return number > 0 ? "Infinity" : "-Infinity";
      return py::repr(key).cast<std::string>();
    }
    return to_utf8(py::str(key));
  }

  nl::json other(const py::handle& value) {
    ensure_datetime_api();
    if (PyDateTime_Check(value.ptr())) {
      py::object moment = py::reinterpret_borrow<py::object>(value);
      if (moment.attr("tzinfo").is_none()) {
        moment = moment.attr("astimezone")();  // naive: local time, as jupyter_client
      }
      std::string text = py::str(moment.attr("isoformat")()).cast<std::string>();
      constexpr std::string_view utc = "+00:00";
      if (text.ends_with(utc)) text.replace(text.size() - utc.size(), utc.size(), "Z");
      return text;
    }
    if (PyDate_Check(value.ptr())) return py::str(value.attr("isoformat")()).cast<std::string>();
    // NumPy arrays and scalars (numpy.bool_ has no __index__).
    if (py::hasattr(value, "dtype") && py::hasattr(value, "tolist")) {
      return convert(value.attr("tolist")());
    }
    if (PyIndex_Check(value.ptr())) {
      const py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));
      if (!index) throw py::error_already_set();
      return integer(index);
    }
    if (isinstance_of(value, "numbers", "Real")) {
      const double number = PyFloat_AsDouble(value.ptr());
      if (number == -1.0 && PyErr_Occurred() != nullptr) throw py::error_already_set();
      return real(number);
    }
    if (isinstance_of(value, "collections.abc", "Mapping")) return object(value);
    if (isinstance_of(value, "collections.abc", "Iterable")) return array(value);
    fail("an object of type '" + type_name(value) + "' cannot be written as JSON");
  }

  [[noreturn]] void fail(const std::string& problem) const {
    std::string where = m_root;
    for (const std::string& step : m_path) where += step;
    throw py::type_error(where + ": " + problem);
  }

  const char* m_root;
  std::vector<std::string> m_path;
};

}  // namespace

nl::json to_message_json(const py::handle& value, const char* root) {
  return converter(root).convert(value);
}

nl::json to_message_json_object(const py::handle& value, const char* root) {
  return value.is_none() ? nl::json::object() : to_message_json(value, root);
}

std::string to_utf8(const py::handle& text) {
  Py_ssize_t size = 0;
  if (const char* utf8 = PyUnicode_AsUTF8AndSize(text.ptr(), &size); utf8 != nullptr) {
    return std::string(utf8, static_cast<std::size_t>(size));
  }
  // Lone surrogates: UTF-8 cannot hold them.
  PyErr_Clear();
  const Py_ssize_t length = PyUnicode_GetLength(text.ptr());
  const int kind = PyUnicode_KIND(text.ptr());
  const void* data = PyUnicode_DATA(text.ptr());
  std::string out;
  out.reserve(static_cast<std::size_t>(length));
  for (Py_ssize_t i = 0; i < length; ++i) {
    const Py_UCS4 c = PyUnicode_READ(kind, data, i);
    if (is_surrogate(c)) {
      out += replacement_character;
    } else {
      append_utf8(out, c);
    }
  }
  return out;
}

}  // namespace interp_rpc::kernel
