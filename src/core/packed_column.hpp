// A list or tuple of one scalar type, packed into one column to cross the
// interpreter boundary.
//
// Pickle writes a list of 10^6 ints one object at a time, and reads it back
// the same way; most of a tiny-item map's time went there. A column is the
// values as one buffer: ints and floats as machine values, str and bytes
// joined by a separator that no item contains. The receiver rebuilds the list
// with standard library calls alone (array.tolist, str.split, bytes.split;
// see _worker/columns.py), so a worker needs nothing of ours to read one.
//
// Only what comes back exactly is packed: exact int that fits 64 bits, exact
// float (every bit, so -0.0 and each NaN stay what they were), exact str and
// bytes. A bool, an IntEnum or any subclass, a larger int, a mixed list, an
// item at least `max_item` long, or a str or bytes object met twice (pickle
// would rebuild it as one object; split would give two) leaves the values
// to pickle.
#pragma once

#include <Python.h>

namespace interp_rpc::core {

// What a column holds; the first element of pack_column()'s answer.
enum class column_kind : int { int64 = 0, float64 = 1, str = 2, bytes = 3 };

// With the GIL of the interpreter that owns `values` (an exact list or
// tuple): a new (kind, payload, separator) tuple, where payload is bytes of
// machine values for int64 and float64 (separator None), and the items
// joined by the separator for str and bytes. Py_None (a new reference) when
// the values are not a column; null with a Python error set only when
// memory runs out. Runs no Python code, so the values cannot change under it.
PyObject* pack_column(PyObject* values, Py_ssize_t max_item);

// A new builtin function object, `pack_column(values, max_item)`, in the
// current interpreter: how a worker's Python code calls pack_column.
PyObject* new_pack_column_function();

}  // namespace interp_rpc::core
