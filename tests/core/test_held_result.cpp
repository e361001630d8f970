// held_result: values a worker lends its caller, copied out once, kept
// readable if the worker ends first, released only when copied or dropped.
// One interpreter plays both sides here (the main thread holds its GIL).
#include <doctest/doctest.h>

#include <string>

#include "core/held_result.hpp"
#include "core/python_ref.hpp"

using namespace interp_rpc::core;

namespace {

py_ref lent_values() {
  // bytes, and str of each storage width (latin-1, UCS-2, UCS-4).
  return py_ref::steal(Py_BuildValue("[y#sss]", "a\0b", static_cast<Py_ssize_t>(3), "caf\xc3\xa9",
                                     "\xe2\x82\xac uro", "\xf0\x9f\x98\x80!"));
}

bool equal(PyObject* a, PyObject* b) { return PyObject_RichCompareBool(a, b, Py_EQ) == 1; }

}  // namespace

TEST_CASE("lent values are copied out equal, of the same types") {
  py_ref values = lent_values();
  held_result held;
  REQUIRE(held.hold(values.get()));
  CHECK_FALSE(held.release_if_done());  // not read yet: still the worker's
  py_ref copied = py_ref::steal(held.copy_out());
  REQUIRE(copied);
  CHECK(equal(copied.get(), values.get()));
  for (Py_ssize_t i = 0; i < 4; ++i) {
    CHECK(Py_TYPE(PyList_GET_ITEM(copied.get(), i)) == Py_TYPE(PyList_GET_ITEM(values.get(), i)));
    CHECK(PyList_GET_ITEM(copied.get(), i) != PyList_GET_ITEM(values.get(), i));
  }
  CHECK(held.release_if_done());
  // A second read is an error, not a read of released memory.
  CHECK(held.copy_out() == nullptr);
  CHECK(PyErr_ExceptionMatches(PyExc_RuntimeError));
  PyErr_Clear();
}

TEST_CASE("values a worker lent stay readable after the worker let go of them") {
  held_result held;
  {
    py_ref values = lent_values();
    REQUIRE(held.hold(values.get()));
    held.detach();  // the worker ends: its objects go
  }
  py_ref copied = py_ref::steal(held.copy_out());
  REQUIRE(copied);
  py_ref expected = lent_values();
  CHECK(equal(copied.get(), expected.get()));
}

TEST_CASE("dropped values are released, and say so if read") {
  py_ref values = lent_values();
  PyObject* first = PyList_GET_ITEM(values.get(), 0);
  const Py_ssize_t before = Py_REFCNT(first);
  held_result held;
  bool woken = false;
  REQUIRE(held.hold(values.get()));
  held.when_done([&woken] { woken = true; });
  CHECK(Py_REFCNT(first) == before + 1);
  held.abandon();
  CHECK(woken);
  CHECK(held.release_if_done());
  CHECK(Py_REFCNT(first) == before);
  CHECK(held.copy_out() == nullptr);
  PyErr_Clear();
}

TEST_CASE("only exact bytes and str can be lent") {
  py_ref values = py_ref::steal(Py_BuildValue("[y, i]", "ok", 3));
  held_result held;
  CHECK_FALSE(held.hold(values.get()));
  CHECK(PyErr_ExceptionMatches(PyExc_TypeError));
  PyErr_Clear();
  held.abandon();
  CHECK(held.release_if_done());
}

namespace {

constexpr Py_ssize_t large = 16 << 20;  // above the size from which pages move

// A list holding one new large bytes (every byte set) and, for str, one
// new large latin-1 str; `pattern` tells them apart.
py_ref large_values(char pattern) {
  py_ref bytes = py_ref::steal(PyBytes_FromStringAndSize(nullptr, large));
  py_ref text = py_ref::steal(PyUnicode_New(large, 0xff));
  REQUIRE(bytes);
  REQUIRE(text);
  for (Py_ssize_t i = 0; i < large; ++i) {
    PyBytes_AS_STRING(bytes.get())[i] = static_cast<char>(pattern + i % 251);
    PyUnicode_1BYTE_DATA(text.get())[i] = static_cast<Py_UCS1>(0x80 + (pattern + i) % 127);
  }
  return py_ref::steal(Py_BuildValue("[OO]", bytes.get(), text.get()));
}

}  // namespace

TEST_CASE("large values the worker no longer references move their pages, equal") {
  py_ref expected = large_values('a');
  held_result held;
  {
    py_ref values = large_values('a');
    REQUIRE(held.hold(values.get()));
  }  // the reply's list is gone: `held` alone references the values
  held.mark_sole_owner();
  const auto before = held_result::pages_moved();
  py_ref copied = py_ref::steal(held.copy_out());
  REQUIRE(copied);
  CHECK(PyObject_RichCompareBool(copied.get(), expected.get(), Py_EQ) == 1);
  CHECK(held_result::pages_moved() > before);
  CHECK(held.release_if_done());
}

TEST_CASE("large values the worker still references are copied, and stay intact") {
  py_ref values = large_values('b');
  py_ref expected = large_values('b');
  held_result held;
  REQUIRE(held.hold(values.get()));
  held.mark_sole_owner();  // `values` still holds them
  const auto before = held_result::pages_moved();
  py_ref copied = py_ref::steal(held.copy_out());
  REQUIRE(copied);
  CHECK(held_result::pages_moved() == before);
  CHECK(PyObject_RichCompareBool(copied.get(), expected.get(), Py_EQ) == 1);
  CHECK(PyObject_RichCompareBool(values.get(), expected.get(), Py_EQ) == 1);
  CHECK(held.release_if_done());
}

TEST_CASE("values kept after the worker ended are copied from the kept copy") {
  py_ref expected = large_values('c');
  held_result held;
  {
    py_ref values = large_values('c');
    REQUIRE(held.hold(values.get()));
  }
  held.mark_sole_owner();
  held.detach();  // the worker ends first: its objects go, our copy stays
  py_ref copied = py_ref::steal(held.copy_out());
  REQUIRE(copied);
  CHECK(PyObject_RichCompareBool(copied.get(), expected.get(), Py_EQ) == 1);
}
