// The queue workers take their calls from (many producers, many consumers).
//
// Most calls go to the shared lane and run on whichever worker is free.
// A call can also be pinned to one worker (running a notebook cell in every
// worker's __main__ needs that); a worker serves its own lane first.
//
// A call for any worker that arrives while a worker is idle (spinning for
// work, or else asleep) is handed to that worker at once: from then on it is
// that worker's, as if it had started (remove() and the drains no longer see
// it). Otherwise whether an idle pool "had started" a call just submitted
// would depend on how fast the OS runs a thread, and shutdown(
// cancel_futures=True) right after a burst of submits could cancel them all
// (a spinner preempted on a loaded machine left every call queued).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "core/call.hpp"

namespace interp_rpc::core {

// How long an idle worker spins for its next call before it sleeps. Only one
// idle worker spins at a time: a caller making one call after another needs
// just one, and each more spinner takes a core from the caller (with two
// workers on two cores, two spinners left the caller none).
inline constexpr std::int64_t pop_spin_ns = 50'000;

class job_queue {
 public:
  // `spin_ns`: how long an idle worker spins (tests make it long).
  explicit job_queue(int workers, std::int64_t spin_ns = pop_spin_ns);

  enum class push_result { queued, closed, broken };

  // Queues a call for any worker (`worker` < 0) or for that worker only.
  // A call for a worker whose lane is closed (dead) is refused as broken.
  push_result push(call_ptr c, int worker = -1);
  // Queues calls for any worker, all or none, under one lock: a worker that
  // drains the queue finds the next call there, where a push per call would
  // let it go to sleep and be woken between two of them. Each call goes
  // where push() would put it.
  push_result push_many(const std::vector<call_ptr>& calls);
  // The number of wake_up() calls so far; pass it to pop().
  unsigned generation() const;
  // Blocks until a call for `worker` is available: one handed to it, then
  // its own lane, then the shared lane. Returns null once the queue is
  // closed and has nothing for it, or if wake_up() was called since
  // `seen_generation` was read.
  call_ptr pop(int worker, unsigned seen_generation);
  // How many workers sleep in pop() with nothing handed to them yet.
  std::size_t sleeping() const;
  // How many workers wait in pop() now, spinning or asleep.
  std::size_t waiting() const;
  // Makes pop() return so workers look at their control flags (faults).
  // Queued calls stay queued.
  void wake_up();

  // Takes a call out of the queue if it is still there (neither started nor
  // handed to a worker).
  bool remove(const call_ptr& c);
  // The worker will never take another call: refuse calls pinned to it from
  // now on, and hand back those already queued for it. Done under the queue's
  // lock, so a concurrent push() either lands before (and is handed back) or
  // is refused: no call is stranded in a dead worker's lane.
  std::vector<call_ptr> close_lane(int worker);

  // No new calls are accepted; queued calls still run (close(wait=True)).
  void close();
  // Stop accepting, and hand back every queued call.
  std::vector<call_ptr> close_and_drain();
  // Every worker is gone: refuse everything and hand back what was queued.
  std::vector<call_ptr> break_and_drain();

  std::size_t size() const;
  bool closed() const;

 private:
  // Sets `flag` (m_closed or m_broken) and hands back every queued call.
  std::vector<call_ptr> stop_and_drain(bool& flag);
  std::vector<call_ptr> take_all_locked();
  void update_size_locked();
  // A sleeping worker with nothing handed to it, or -1.
  int idle_sleeper_locked() const;
  // Hands a call for any worker to an idle sleeper, when no worker spins
  // (returns the sleeper to wake), or queues it on the shared lane (-1).
  int place_shared_locked(call_ptr c);
  void wake_all();

  mutable std::mutex m_mutex;
  // One per worker: a push wakes exactly the worker it is for.
  std::unique_ptr<std::condition_variable[]> m_wake;
  std::deque<call_ptr> m_shared;
  std::vector<std::deque<call_ptr>> m_pinned;
  std::vector<bool> m_lane_closed;
  // A call given to a sleeping worker; null when it has none.
  std::vector<call_ptr> m_handed;
  std::vector<bool> m_sleeping;
  bool m_closed = false;
  bool m_broken = false;
  // Readable without the mutex, for the spin before sleeping.
  std::atomic<std::size_t> m_size{0};
  std::atomic<unsigned> m_generation{0};
  // The worker spinning for work, or -1. It is handed the next call (no
  // wake-up needed); the calls after that go to sleepers, one each, then to
  // the shared lane.
  std::atomic<int> m_spinner{-1};
  // Counts hand-offs, so that a spinning worker sees one made to it.
  std::atomic<unsigned> m_handoffs{0};
  const std::int64_t m_spin_ns;
};

}  // namespace interp_rpc::core
