// One request to a worker and its reply: the unit the queue carries.
//
// A call is shared (std::shared_ptr) between the caller, the queue, the worker
// and the completion thread, so it outlives whichever side finishes first.
// The bytes in it are plain C++ data: no Python object ever crosses between
// interpreters.
#pragma once

#include <Python.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/held_result.hpp"
#include "core/shared_copy.hpp"

namespace interp_rpc::core {

// How a call ended, as far as the engine knows. What the worker's Python code
// reported (returned, raised, bad target...) is in `reply_kind`.
enum class call_outcome : std::uint8_t {
  pending,       // not finished yet
  replied,       // the worker ran it and sent a reply
  worker_died,   // the worker running it (or about to) is gone
  cancelled,     // removed from the queue before it ran (close(wait=False))
  pool_broken,   // every worker died before it ran
};

const char* to_string(call_outcome outcome) noexcept;

// A read-only window on caller-owned memory (a pickle protocol 5 out-of-band
// buffer). The caller keeps the owner alive until the call is released.
struct buffer_view {
  const void* data;
  Py_ssize_t size;
};

// Timestamps (monotonic ns, 0 = not reached) and costs of one call.
struct call_timing {
  std::int64_t submitted_ns = 0;   // caller: before serializing the request
  std::int64_t enqueued_ns = 0;    // caller: request in the queue
  std::int64_t started_ns = 0;     // worker: took it off the queue
  std::int64_t finished_ns = 0;    // worker: reply ready
  std::int64_t serialize_ns = 0;   // caller: pickling the request
  std::int64_t deserialize_ns = 0; // worker: unpickling the request
  std::int64_t result_serialize_ns = 0;  // worker: pickling the reply
};

// How long a waiting caller spins before it sleeps (see spin.hpp).
inline constexpr std::int64_t reply_spin_ns = 30'000;

class call {
 public:
  call(std::uint64_t id, std::string target, std::string request,
       std::vector<buffer_view> buffers, std::int64_t item_index, std::int64_t item_count);
  call(const call&) = delete;
  call& operator=(const call&) = delete;
  ~call();

  const std::uint64_t id;
  const std::string target;          // what the status board shows
  const std::string request;         // the pickled request
  std::vector<buffer_view> buffers;  // set before the call is queued, then read-only
  const std::int64_t item_index;     // first item of a map chunk, or -1
  const std::int64_t item_count;     // items in the chunk (1 for a single call)

  call_timing timing;

  // --- completion (written once, by whoever finishes the call) --------------
  // Records the reply and wakes waiters. Returns false if already completed.
  bool complete(call_outcome outcome, int reply_kind, std::string reply, int worker_index);
  bool done() const noexcept { return m_outcome.load(std::memory_order_acquire) != call_outcome::pending; }
  // Blocks until done or until `timeout_ns` passed (< 0: no limit). The caller
  // must not hold any GIL. Returns done().
  bool wait_for(std::int64_t timeout_ns);

  // Valid once done().
  call_outcome outcome() const noexcept { return m_outcome.load(std::memory_order_acquire); }
  int reply_kind() const noexcept { return m_reply_kind; }
  const std::string& reply() const noexcept { return m_reply; }
  int worker_index() const noexcept { return m_worker_index; }

  // --- settling: exactly one party turns the reply into a Python result ------
  //
  // Settling a finished call means running its Python side in the main
  // interpreter (a future's outcome) and releasing what it holds there
  // (completion_owner, held_buffers). Two parties can do it:
  //   - the caller that waited for the call directly (begin_direct_wait() ...
  //     end_direct_wait()), when end_direct_wait() says the call is done;
  //   - the completion thread, which sees every finished call that
  //     needs_completion(), and settles it when left_to_completion_thread().
  //
  // At most one settles: each must win try_claim(), a single exchange.
  //
  // At least one settles, and the completion thread skips a call whose
  // caller is still waiting for it (no main-GIL round trip for a reply that
  // the caller takes itself). The four operations involved are seq_cst:
  //   caller:      W  direct_waiter = false   then  D? read the outcome
  //   finisher:    D  store the outcome        then (through the completion
  //   (worker, then the completion thread)          queue's lock) W? read direct_waiter
  // They are totally ordered, each side's pair in program order. If the
  // caller read "pending", D came after its read, so W came before the
  // completion thread's read, which sees direct_waiter false and settles.
  // If the completion thread read "waiting", its read came before W, so D
  // did too, and the caller's read sees the call done and settles it.
  // Plain acquire/release would allow both to read the old value (a store
  // followed by a load of another variable may be reordered), and the call
  // would never be settled: its future would hang and its buffers leak.
  bool try_claim() noexcept { return !m_claimed.exchange(true, std::memory_order_acq_rel); }
  bool claimed() const noexcept { return m_claimed.load(std::memory_order_acquire); }

  // The caller is about to wait for the call and settle it itself.
  void begin_direct_wait() noexcept { m_direct_waiter.store(true, std::memory_order_seq_cst); }
  // The caller's wait ended (done, timed out or interrupted). Returns whether
  // the call is done: if so the caller must settle it (try_claim() decides
  // against the completion thread); if not, the completion thread will.
  bool end_direct_wait() noexcept {
    m_direct_waiter.store(false, std::memory_order_seq_cst);
    return m_outcome.load(std::memory_order_seq_cst) != call_outcome::pending;
  }
  // For the completion thread, with a call that is done: whether no caller
  // waits on it, so that the completion thread must settle it (if it still
  // wins try_claim()).
  bool left_to_completion_thread() const noexcept {
    return !m_direct_waiter.load(std::memory_order_seq_cst) && !claimed();
  }

  // A main-interpreter object the completion thread must call back once the
  // call is done (a future to settle). Owned strong reference; touched only
  // with the main GIL. Null when nobody needs a callback.
  PyObject* completion_owner = nullptr;

  // The caller's exports behind `buffers`, released with the main GIL by
  // whoever settles the call, unless the worker reported that the target
  // kept a view of them (then they are never released: see buffer_lease.hpp).
  std::vector<Py_buffer> held_buffers;
  std::atomic<bool> buffers_retained{false};

  // The large values the reply holds rather than carries (held_result.hpp),
  // set by the worker before it completes the call; null when none.
  std::shared_ptr<held_result> held;

  // Set before the call is queued when one of `buffers` is large enough that
  // the worker's copy of it is worth sharing (argument_copy.hpp): the caller
  // that waits for the call then stands by to take a share. Null otherwise.
  std::unique_ptr<shared_copy> argument_copy;

  // Whether the completion thread must see this call once it is done.
  bool needs_completion() const noexcept {
    return completion_owner != nullptr || !held_buffers.empty();
  }

 private:
  std::atomic<call_outcome> m_outcome{call_outcome::pending};
  int m_reply_kind = 0;
  std::string m_reply;
  int m_worker_index = -1;
  std::atomic<bool> m_claimed{false};
  std::atomic<bool> m_direct_waiter{false};

  std::mutex m_mutex;
  std::condition_variable m_cv;
  bool m_has_waiters = false;
};

using call_ptr = std::shared_ptr<call>;

}  // namespace interp_rpc::core
