// Python threads that publish for one cell.
//
// Output from a thread other than the main one belongs to the latest execute
// request (output_parent). A Python thread that keeps updating a display of
// the cell that started it, after that cell ended (%parallel_status --watch
// on a dask cluster), would then send its updates to whatever cell runs
// next. _interp_rpc_kernel.cell_parent(), called by the cell, captures the
// request it belongs to; its run(fn, *args), called in the thread, runs fn
// with that thread's output pinned to that request (a thread_parent), as the
// C++ live view pins its own.
#pragma once

#include <pybind11/pybind11.h>

namespace interp_rpc::kernel {

// Adds cell_parent() and its CellParent type to the kernel's Python module.
void bind_cell_parent(pybind11::module_& m);

}  // namespace interp_rpc::kernel
