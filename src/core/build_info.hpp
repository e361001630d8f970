// What the engine was compiled against, for bug reports and version checks.
#pragma once

#include <string>

namespace interp_rpc::core {

struct build_info {
  std::string python_version;    // PY_VERSION of the headers we compiled with
  unsigned long python_hexversion;
  std::string compiler;
  long cplusplus;                // the __cplusplus the engine was built with
  bool sanitized;                // built with ASan + UBSan, or with TSan
};

build_info get_build_info();

}  // namespace interp_rpc::core
