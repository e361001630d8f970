#include <doctest/doctest.h>

#include <Python.h>

#include "core/build_info.hpp"

TEST_CASE("build_info reports the Python headers the engine was compiled against") {
  const auto info = interp_rpc::core::get_build_info();
  CHECK(info.python_version == PY_VERSION);
  CHECK(info.python_hexversion >= 0x030E0000UL);  // 3.14: PEP 734
  CHECK(info.cplusplus >= 202002L);
  // The runtime libpython matches the headers' major.minor.
  const std::string runtime = Py_GetVersion();
  CHECK(runtime.rfind(std::to_string(PY_MAJOR_VERSION) + "." + std::to_string(PY_MINOR_VERSION) + ".", 0) == 0);
}
