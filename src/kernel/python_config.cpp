#include "kernel/python_config.hpp"

#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace interp_rpc::kernel {

namespace {

void check(PyStatus status) {
  if (PyStatus_Exception(status) != 0) {
    throw std::runtime_error(status.err_msg != nullptr ? status.err_msg
                                                       : "cannot configure Python");
  }
}

}  // namespace

void init_python_config(PyConfig& config) {
  PyConfig_InitPythonConfig(&config);
  config.parse_argv = 0;
  config.install_signal_handlers = 1;

  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path binary = fs::read_symlink("/proc/self/exe", error);
  if (error) {
    return;
  }
  const fs::path bin_dir = binary.parent_path();
  const fs::path python = bin_dir / "python3";
  // A venv has pyvenv.cfg one level above its bin/; CPython finds it from
  // the program name, as it does for the venv's own python3.
  if (fs::exists(bin_dir.parent_path() / "pyvenv.cfg", error) && fs::exists(python, error)) {
    check(PyConfig_SetBytesString(&config, &config.program_name, python.c_str()));
  }
}

}  // namespace interp_rpc::kernel
