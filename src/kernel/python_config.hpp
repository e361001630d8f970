// How the kernel configures the CPython it embeds.
#pragma once

#include <Python.h>

namespace interp_rpc::kernel {

// A Python configuration like the `python3` command's (environment variables
// such as PYTHONPATH apply, signal handlers are installed, arguments are not
// parsed). When the kernel binary sits in a virtual environment's bin/ (pip
// installed it there), Python starts as that environment's python3 would, so
// the environment's site-packages are importable and sys.executable is the
// environment's python3.
void init_python_config(PyConfig& config);

// Once Python runs, with the GIL: outside a virtual environment, CPython takes
// the kernel binary for sys.executable, and every library that starts "another
// Python" with it (subprocess, multiprocessing's spawn and forkserver, %pip)
// would start the kernel instead. Points sys.executable (and
// sys._base_executable) at the python3.X of the installation whose libpython
// the kernel embeds. Must run before multiprocessing is imported: it reads
// sys.executable once.
void use_installed_python_as_executable();

}  // namespace interp_rpc::kernel
