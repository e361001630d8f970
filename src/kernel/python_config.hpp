// How the kernel configures the CPython it embeds.
#pragma once

#include <Python.h>

namespace interp_rpc::kernel {

// A Python configuration like the `python3` command's (environment variables
// such as PYTHONPATH apply, signal handlers are installed, arguments are not
// parsed). When the kernel binary sits in a virtual environment's bin/ (pip
// installed it there), Python starts as that environment's python3 would, so
// the environment's site-packages are importable.
void init_python_config(PyConfig& config);

}  // namespace interp_rpc::kernel
