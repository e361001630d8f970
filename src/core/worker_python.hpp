// What a worker thread runs in its own interpreter, through the raw C API:
// the bootstrap that makes it a worker, and one call. The thread, its queue
// and its interpreter's lifetime are pool.cpp's.
#pragma once

#include <Python.h>

#include <string>

#include "core/call.hpp"
#include "core/pool.hpp"
#include "core/python_ref.hpp"

namespace interp_rpc::core {

// The current Python exception of this thread's interpreter, formatted the
// way the traceback module would, and cleared.
std::string take_python_error();

// What a worker thread calls in its interpreter: the bootstrap module's
// execute(), and its after_reply list, where execute() leaves the call's
// arguments and result for release_after_reply() (see _worker/main.py).
struct worker_functions {
  py_ref execute;
  py_ref after_reply;
  explicit operator bool() const noexcept { return static_cast<bool>(execute); }
};

// Runs the bootstrap source in a fresh module of this interpreter and calls
// its setup(), which answers with a reply kind and reply (set in `kind`,
// `reply`). Returns the module's functions on success, empty ones otherwise.
worker_functions bootstrap(const pool_options& options, int& kind, std::string& reply);

// Runs one call through execute(request, buffers), lending the caller's
// buffers as views leased from `lease_type` (buffer_lease.hpp), and sets its
// reply kind, reply and costs. Never leaves a Python error set.
void run_call(const worker_functions& worker, PyObject* lease_type, call& c, int& kind,
              std::string& reply);

// Once the call's reply is on its way: lets go of the arguments and result
// that execute() kept, so that freeing them is not part of the call's
// latency. Never leaves a Python error set.
void release_after_reply(const worker_functions& worker);

}  // namespace interp_rpc::core
