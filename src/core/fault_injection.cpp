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

// The number an environment variable holds, or -1.
int number_in(const char* variable) noexcept {
  const char* value = std::getenv(variable);
  if (value == nullptr) return -1;
  int index = -1;
  const char* end = value + std::strlen(value);
  const auto [parsed_to, error] = std::from_chars(value, end, index);
  return error == std::errc{} && parsed_to == end ? index : -1;
}

std::atomic<bool> g_interpreter_failed{false};
std::atomic<int> g_reply_copies{0};

}  // namespace

bool fail_interpreter_creation(int index) noexcept {
  static const int failing = number_in(fail_interpreter_variable);
  return index == failing && !g_interpreter_failed.exchange(true);
}

bool fail_reply_copy() noexcept {
  static const int failing = number_in(fail_reply_copy_variable);
  return failing > 0 && g_reply_copies.fetch_add(1) + 1 == failing;
}

#else

bool fail_interpreter_creation(int) noexcept { return false; }
bool fail_reply_copy() noexcept { return false; }

#endif

}  // namespace interp_rpc::core::fault_injection
