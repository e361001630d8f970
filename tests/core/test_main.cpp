// doctest's main, with one embedded CPython for the whole test run.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <Python.h>

int main(int argc, char** argv) {
  Py_InitializeEx(0);
  doctest::Context context(argc, argv);
  const int result = context.run();
  if (Py_FinalizeEx() != 0) {
    return result == 0 ? 1 : result;
  }
  return result;
}
