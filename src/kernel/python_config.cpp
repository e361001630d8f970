#include "kernel/python_config.hpp"

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

#include <pybind11/pybind11.h>

namespace py = pybind11;

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

void use_installed_python_as_executable() {
  namespace fs = std::filesystem;
  const py::module_ sys = py::module_::import("sys");
  const fs::path current = sys.attr("executable").cast<std::string>();
  std::error_code error;
  const fs::path binary = fs::read_symlink("/proc/self/exe", error);
  if (error || !fs::equivalent(current, binary, error)) {
    return;  // already a python (the venv case), or unknown
  }
  const py::tuple version = sys.attr("version_info");
  const std::string versioned =
      "python" + py::str(version[0]).cast<std::string>() + "." + py::str(version[1]).cast<std::string>();
  const fs::path bin_dir = fs::path(sys.attr("base_prefix").cast<std::string>()) / "bin";
  for (const fs::path& candidate : {bin_dir / versioned, bin_dir / "python3"}) {
    if (fs::exists(candidate, error)) {
      sys.attr("executable") = candidate.string();
      sys.attr("_base_executable") = candidate.string();
      return;
    }
  }
}

}  // namespace interp_rpc::kernel
