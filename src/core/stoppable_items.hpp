// A chunk's items, handed to the worker's loop one at a time until the map
// is stopped.
//
// A map stops its running chunks before their next item by setting a byte
// that the worker reads before every item (_pool/map.py). Read by the loop
// itself (`if stop[0]:` on a memoryview), that check cost a tiny item about
// 60% more time. This iterator reads the byte in C before it hands over each
// item; once the byte is set it raises the map's stop error instead, naming
// the item it stopped before.
#pragma once

#include <Python.h>

namespace interp_rpc::core {

// A new type object in the current interpreter:
//   stoppable_items(items, flag, stopped, first_index)
// iterates over `items` (any iterable); before each item it reads the
// first byte of `flag` (a writable or read-only buffer, held until the
// iterator goes) and, if it is not 0, raises
//   stopped("the map was stopped before item N")
// where N is first_index plus the items handed over so far.
PyObject* new_stoppable_items_type();

}  // namespace interp_rpc::core
