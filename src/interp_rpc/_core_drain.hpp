// interp_rpc._core.drain: how a map hands over each chunk's results.
//
// A map's iterator chains one iterator per chunk over the list of that
// chunk's results, which only the map holds. Executor.map lets go of each
// result as it yields it (CPython's executor tests check that a result the
// caller dropped is freed at once), so the list must not keep an item once
// it was taken. map(list.pop, ...) over the reversed list did that, at a
// call per item: about a tenth of a tiny-item map's time in the caller.
// drain(values) takes an item as a list iterator does, and puts None in its
// slot.
#pragma once

#include <Python.h>

namespace interp_rpc::binding {

// A new type object, `drain(values: list)`, in the current interpreter: an
// iterator over `values` that replaces each item it returns with None, and
// lets go of the list when it reaches its end.
PyObject* new_drain_type();

}  // namespace interp_rpc::binding
