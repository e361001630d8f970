// interp_rpc._core: the pybind11 face of the C++ engine.
#include <pybind11/pybind11.h>

#include "core/build_info.hpp"

namespace py = pybind11;

PYBIND11_MODULE(_core, m) {
  m.doc() = "The C++ engine of interp-rpc.";

  m.def(
      "build_info",
      [] {
        const auto info = interp_rpc::core::get_build_info();
        py::dict d;
        d["interp_rpc"] = INTERP_RPC_VERSION;
        d["python"] = info.python_version;
        d["python_hexversion"] = info.python_hexversion;
        d["pybind11"] = std::to_string(PYBIND11_VERSION_MAJOR) + "." +
                        std::to_string(PYBIND11_VERSION_MINOR) + "." +
                        std::to_string(PYBIND11_VERSION_PATCH);
        d["compiler"] = info.compiler;
        d["cplusplus"] = info.cplusplus;
        d["sanitized"] = info.sanitized;
        return d;
      },
      "The versions interp-rpc's engine was compiled against.");
}
