// One clock for every timestamp the engine records: monotonic nanoseconds.
#pragma once

#include <chrono>
#include <cstdint>

namespace interp_rpc::core {

inline std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace interp_rpc::core
