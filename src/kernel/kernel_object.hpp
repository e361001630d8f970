// get_ipython().kernel: what libraries ask of the kernel object, as ipykernel's
// Kernel offers it.
//
// - get_parent(): the whole request the calling thread's output belongs to
//   (ipywidgets' Output widget captures the output of that request).
// - comm_manager: the comm package's manager (see comm.hpp).
// - session and iopub_socket: `kernel.session.send(kernel.iopub_socket,
//   msg_type, content, parent=..., buffers=..., metadata=...)` publishes on
//   IOPub, as ipykernel's own Comm and older widget libraries do. The session
//   sends on that socket only.
// - shell and execution_count: the IPython shell and its count, as
//   ipykernel's kernel has them.
// - io_loop: the loop cells run on (event_loop.py's KernelIOLoop), whose
//   add_callback any thread may call, as tornado's.
// - set_parent(ident, parent): the request the calling thread's output
//   belongs to, until the next request (the main thread) or the next execute
//   request (other threads, when parent is one).
#pragma once

#include <pybind11/pybind11.h>

namespace interp_rpc::kernel {

class interpreter;

// Defines the Python classes in m; returns the kernel object of `owner`.
pybind11::object make_kernel_object(pybind11::module_& m, interpreter& owner);

// Once the kernel is gone (Python outlives it): get_parent() returns {} and
// send() raises.
void detach_kernel_object(pybind11::handle kernel_object);

}  // namespace interp_rpc::kernel
