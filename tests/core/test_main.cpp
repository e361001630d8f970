// doctest's main, with one embedded CPython for the whole test run.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <Python.h>

#include "core/arena_cache.hpp"

int main(int argc, char** argv) {
  Py_InitializeEx(0);
  interp_rpc::core::install_arena_cache();  // as _core does: the engine runs with it
  doctest::Context context(argc, argv);
  const int result = context.run();
  if (Py_FinalizeEx() != 0) {
    return result == 0 ? 1 : result;
  }
  return result;
}
