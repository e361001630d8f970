// How a worker sees the caller's out-of-band buffers: read-only memoryviews
// over a small "lease" object of the worker's own interpreter.
//
// Every view of the caller's memory, however derived (slices, memoryview(v),
// a C extension's Py_buffer), keeps its lease alive. After the call the
// worker drops its own references; if a lease is still alive, the target
// kept a view, and the caller must never free that memory (the call is then
// marked buffers_retained). This makes zero-copy arguments safe against
// targets that misbehave.
#pragma once

#include <Python.h>

#include <atomic>
#include <memory>

#include "core/python_ref.hpp"

namespace interp_rpc::core {

using lease_counter = std::shared_ptr<std::atomic<int>>;

// The lease type for the current interpreter (a heap type: types must not be
// shared between interpreters with their own GIL). Null with an exception set
// on failure.
py_ref make_lease_type();

// A read-only memoryview of [data, data + size) whose lease counts itself in
// `live` while it exists. Null with an exception set on failure.
py_ref make_leased_view(PyObject* lease_type, const void* data, Py_ssize_t size,
                        const lease_counter& live);

}  // namespace interp_rpc::core
