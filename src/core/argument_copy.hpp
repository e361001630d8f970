// A large bytes or bytearray argument, copied by its worker with the waiting
// caller's help.
//
// Such an argument crosses out of band (wire.py's _Copied): the worker makes
// a bytes or bytearray of its own from the caller's memory, one copy, while
// the caller that made the call sits waiting for it on the other core. As
// for a large result (held_result.hpp), one thread's memcpy leaves much of
// the machine's memory bandwidth unused, so the two share the copy
// (shared_copy.hpp):
//   - the caller, before it waits for a call that has such a buffer, stands
//     by: it spins briefly, then sleeps, until the worker has loaded the
//     arguments, the call is done, or a deadline passes;
//   - the worker's Python code rebuilds each such argument with
//     copy_argument(kind, buffer), which copies through the call's
//     shared_copy, and calls arguments_loaded() once every argument is
//     loaded (the engine calls it after the call too, whatever happened).
// Where nobody stands by (a future not waited for yet, a caller that has
// given up), the worker copies alone, as fast as before.
#pragma once

#include <Python.h>

#include <cstdint>

#include "core/call.hpp"

namespace interp_rpc::core {

// Worker thread, around one call's execution: the call that copy_argument()
// and arguments_loaded() serve on this thread.
class current_call_scope {
 public:
  explicit current_call_scope(call& c) noexcept;
  ~current_call_scope();
  current_call_scope(const current_call_scope&) = delete;
  current_call_scope& operator=(const current_call_scope&) = delete;

 private:
  call* m_previous;
};

// The worker module's functions, new references (null with a Python error
// set):
//   copy_argument(kind, buffer): a new `kind` (bytes or bytearray) holding a
//     copy of the buffer's bytes;
//   arguments_loaded(): the call's arguments are loaded; a caller standing
//     by stops.
PyObject* new_copy_argument_function();
PyObject* new_arguments_loaded_function();

// Whether a call whose largest buffer is `size` bytes gets an argument_copy.
bool worth_sharing_argument(Py_ssize_t size) noexcept;

// Caller, holding no GIL, before it waits for `c`: stands by to share the
// worker's copy of its large arguments, until the worker has loaded them, `c`
// is done, or the stand-by's own limit or `limit_ns` (< 0: none) passes.
void stand_by_for_arguments(call& c, std::int64_t limit_ns);

}  // namespace interp_rpc::core
