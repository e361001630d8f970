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

// Runs the bootstrap source in a fresh module of this interpreter and calls
// its setup(), which answers with a reply kind and reply (set in `kind`,
// `reply`). Returns the module's execute() on success.
py_ref bootstrap(const pool_options& options, int& kind, std::string& reply);

// Runs one call through execute(request, buffers), lending the caller's
// buffers as views leased from `lease_type` (buffer_lease.hpp), and sets its
// reply kind, reply and costs. Never leaves a Python error set.
void run_call(PyObject* execute, PyObject* lease_type, call& c, int& kind, std::string& reply);

}  // namespace interp_rpc::core
