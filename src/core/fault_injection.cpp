#include "core/fault_injection.hpp"

#ifdef INTERP_RPC_FAULT_INJECTION
#include <atomic>
#include <charconv>
#include <cstdlib>
#include <cstring>
#endif

namespace interp_rpc::core::fault_injection {

#ifdef INTERP_RPC_FAULT_INJECTION

namespace {

// The worker index the environment names, or -1.
int failing_worker() noexcept {
  const char* value = std::getenv(fail_interpreter_variable);
  if (value == nullptr) return -1;
  int index = -1;
  const char* end = value + std::strlen(value);
  const auto [parsed_to, error] = std::from_chars(value, end, index);
  return error == std::errc{} && parsed_to == end ? index : -1;
}

std::atomic<bool> g_interpreter_failed{false};

}  // namespace

bool fail_interpreter_creation(int index) noexcept {
  static const int failing = failing_worker();
  return index == failing && !g_interpreter_failed.exchange(true);
}

#else

bool fail_interpreter_creation(int) noexcept { return false; }

#endif

}  // namespace interp_rpc::core::fault_injection
