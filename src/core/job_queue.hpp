// The queue every worker takes its calls from (many producers, many consumers).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "core/call.hpp"

namespace interp_rpc::core {

// How long an idle worker spins for its next call before it sleeps.
inline constexpr std::int64_t pop_spin_ns = 50'000;

class job_queue {
 public:
  enum class push_result { queued, closed, broken };

  push_result push(call_ptr c);
  // The number of wake_up() calls so far; pass it to pop().
  unsigned generation() const;
  // Blocks until a call is available. Returns null once the queue is closed
  // and empty, or if wake_up() was called since `seen_generation` was read.
  call_ptr pop(unsigned seen_generation);
  // Makes pop() return so workers look at their control flags (faults).
  // Queued calls stay queued.
  void wake_up();

  // Takes a call out of the queue if it is still there (not started).
  bool remove(const call_ptr& c);

  // No new calls are accepted; queued calls still run (close(wait=True)).
  void close();
  // Stop accepting, and hand back every queued call.
  std::vector<call_ptr> close_and_drain();
  // Every worker is gone: refuse everything and hand back what was queued.
  std::vector<call_ptr> break_and_drain();

  std::size_t size() const;
  bool closed() const;

 private:
  mutable std::mutex m_mutex;
  std::condition_variable m_cv;
  std::deque<call_ptr> m_calls;
  bool m_closed = false;
  bool m_broken = false;
  // Readable without the mutex, for the spin before sleeping.
  std::atomic<std::size_t> m_size{0};
  std::atomic<unsigned> m_generation{0};
};

}  // namespace interp_rpc::core
