// pack_column: which lists become columns, and what their payloads hold.
// (The Python suite compares the round trip with pickle; this runs the C++
// under the sanitizers.)
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/packed_column.hpp"
#include "core/python_ref.hpp"

using namespace interp_rpc::core;

namespace {

constexpr Py_ssize_t max_item = 64 * 1024;

py_ref pack(const char* format, auto... values) {
  py_ref list = py_ref::steal(Py_BuildValue(format, values...));
  REQUIRE(list);
  return py_ref::steal(pack_column(list.get(), max_item));
}

int kind_of(const py_ref& column) {
  REQUIRE(PyTuple_Check(column.get()));
  return static_cast<int>(PyLong_AsLong(PyTuple_GET_ITEM(column.get(), 0)));
}

}  // namespace

TEST_CASE("ints that fit 64 bits pack as machine values") {
  py_ref column = pack("[LLL]", static_cast<long long>(INT64_MIN), 0LL,
                       static_cast<long long>(INT64_MAX));
  REQUIRE(column);
  CHECK(kind_of(column) == static_cast<int>(column_kind::int64));
  PyObject* payload = PyTuple_GET_ITEM(column.get(), 1);
  REQUIRE(PyBytes_GET_SIZE(payload) == 24);
  std::int64_t values[3];
  std::memcpy(values, PyBytes_AS_STRING(payload), sizeof values);
  CHECK(values[0] == INT64_MIN);
  CHECK(values[1] == 0);
  CHECK(values[2] == INT64_MAX);
}

TEST_CASE("floats keep every bit") {
  py_ref column = pack("(ddd)", -0.0, 1.5, 5e-324);
  REQUIRE(column);
  CHECK(kind_of(column) == static_cast<int>(column_kind::float64));
  double values[3];
  std::memcpy(values, PyBytes_AS_STRING(PyTuple_GET_ITEM(column.get(), 1)), sizeof values);
  CHECK(std::signbit(values[0]));
  CHECK(values[2] == 5e-324);
}

TEST_CASE("str and bytes are joined by a separator no item holds") {
  py_ref text = pack("[sss]", "a\x01", "", "b");
  REQUIRE(text);
  CHECK(kind_of(text) == static_cast<int>(column_kind::str));
  Py_ssize_t size = 0;
  const char* joined = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(text.get(), 1), &size);
  CHECK(std::string(joined, static_cast<std::size_t>(size)) == std::string("a\x01\0\0b", 5));
  py_ref bytes = pack("[y#y#]", "x\0y", static_cast<Py_ssize_t>(3), "z", static_cast<Py_ssize_t>(1));
  REQUIRE(bytes);
  CHECK(kind_of(bytes) == static_cast<int>(column_kind::bytes));
  PyObject* separator = PyTuple_GET_ITEM(bytes.get(), 2);
  CHECK(std::string(PyBytes_AS_STRING(separator), 1) == "\x1f");
  CHECK(std::string(PyBytes_AS_STRING(PyTuple_GET_ITEM(bytes.get(), 1)), 5) ==
        std::string("x\0y\x1fz", 5));
}

TEST_CASE("what would not come back exactly is not packed") {
  CHECK(pack("[iO]", 1, Py_True).get() == Py_None);          // a bool among ints
  CHECK(pack("[iN]", 1, PyLong_FromString("9223372036854775808", nullptr, 10)).get() == Py_None);
  CHECK(pack("[id]", 1, 2.0).get() == Py_None);              // mixed
  CHECK(pack("[]").get() == Py_None);                         // empty
  CHECK(pack("{i:i}", 1, 2).get() == Py_None);                // not a list or tuple
  py_ref twice = py_ref::steal(PyUnicode_FromString("twice"));
  CHECK(pack("[OO]", twice.get(), twice.get()).get() == Py_None);  // one object met twice
  py_ref shared = py_ref::steal(PyUnicode_FromString("a"));
  CHECK(pack("[OO]", shared.get(), shared.get()).get() != Py_None);  // a shared singleton
  // One-byte bytes: split would give back one shared object for equal ones,
  // pickle one object each; distinct byte values pack.
  CHECK(pack("[y#y#]", "a", static_cast<Py_ssize_t>(1), "a", static_cast<Py_ssize_t>(1)).get() ==
        Py_None);
  CHECK(pack("[y#y#]", "a", static_cast<Py_ssize_t>(1), "b", static_cast<Py_ssize_t>(1)).get() !=
        Py_None);
}
