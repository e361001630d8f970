#include "core/shared_copy.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/clock.hpp"
#include "core/spin.hpp"

namespace interp_rpc::core {

namespace {

// Small enough that a helper arriving late still finds a share, large
// enough that taking a chunk costs nothing next to copying it.
constexpr std::size_t chunk_bytes = 512u << 10;

// How long the copying thread spins for the helper's last chunk before it
// yields its core (a helper preempted mid-chunk needs one to finish).
constexpr std::int64_t last_chunk_spin_ns = 200'000;

}  // namespace

bool shared_copy::take_chunks(job& j) noexcept {
  bool took = false;
  while (true) {
    const std::size_t at = j.next.fetch_add(chunk_bytes, std::memory_order_relaxed);
    if (at >= j.size) return took;
    took = true;
    const std::size_t n = std::min(chunk_bytes, j.size - at);
    std::memcpy(j.dst + at, j.src + at, n);
    j.done.fetch_add(n, std::memory_order_release);
  }
}

void shared_copy::copy(char* dst, const char* src, std::size_t n) {
  if (n < shared_copy_threshold) {
    std::memcpy(dst, src, n);
    return;
  }
  auto j = std::make_shared<job>();
  j->dst = dst;
  j->src = src;
  j->size = n;
  {
    std::lock_guard lock(m_mutex);
    m_job = j;
    ++m_started;
  }
  m_events.fetch_add(1, std::memory_order_release);
  m_changed.notify_all();
  take_chunks(*j);
  const auto all_done = [&j, n] { return j->done.load(std::memory_order_acquire) == n; };
  while (!spin_until(all_done, last_chunk_spin_ns)) std::this_thread::yield();
}

void shared_copy::finish() {
  {
    std::lock_guard lock(m_mutex);
    m_finished = true;
  }
  m_events.fetch_add(1, std::memory_order_release);
  m_changed.notify_all();
}

bool shared_copy::stand_by(std::int64_t deadline_ns, const std::function<bool()>& leave,
                           std::int64_t poll_ns, std::int64_t spin_ns) {
  bool helped = false;
  std::uint64_t seen = 0;
  spin_until([&] { return m_events.load(std::memory_order_acquire) != 0 || leave(); },
             std::min(spin_ns, deadline_ns - now_ns()));
  std::unique_lock lock(m_mutex);
  while (true) {
    if (m_started != seen) {
      seen = m_started;
      const std::shared_ptr<job> j = m_job;
      lock.unlock();
      if (take_chunks(*j)) helped = true;
      lock.lock();
      continue;
    }
    if (m_finished) return helped;
    const std::int64_t left = deadline_ns - now_ns();
    if (left <= 0 || leave()) return helped;
    m_changed.wait_for(lock, std::chrono::nanoseconds(std::min(left, poll_ns)));
  }
}

}  // namespace interp_rpc::core
