#include "core/build_info.hpp"

#include <Python.h>

namespace interp_rpc::core {

build_info get_build_info() {
  return build_info{
      .python_version = PY_VERSION,
      .python_hexversion = PY_VERSION_HEX,
      .compiler = __VERSION__,
      .cplusplus = __cplusplus,
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
      .sanitized = true,
#else
      .sanitized = false,
#endif
  };
}

}  // namespace interp_rpc::core
