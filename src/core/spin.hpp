// Brief busy-waiting before sleeping on a condition variable.
//
// Waking a sleeping thread costs a futex round trip, about 8-10 us each way on
// the VMs we measured, which dominates a tiny call. A caller that spins for a
// few tens of microseconds usually sees the reply arrive without sleeping,
// and a worker that spins after a reply usually finds the caller's next call.
// The spin is bounded so that idle threads stop burning CPU quickly.
#pragma once

#include <cstdint>

#include "core/clock.hpp"

namespace interp_rpc::core {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Spins until `ready()` or `max_ns` passed; returns ready().
template <class Predicate>
bool spin_until(Predicate&& ready, std::int64_t max_ns) {
  if (ready()) return true;
  const std::int64_t deadline = now_ns() + max_ns;
  while (true) {
    for (int i = 0; i < 64; ++i) {
      cpu_relax();
      if (ready()) return true;
    }
    if (now_ns() >= deadline) return ready();
  }
}

}  // namespace interp_rpc::core
