// The engine: N worker threads, each attached for its whole life to its own
// subinterpreter (own GIL), fed from one queue.
//
// Threading rules (see docs/architecture.md, "How the engine works"):
//   - Workers run Python only in their own interpreter, through the Python
//     code in `bootstrap_source` (interp_rpc/_worker/main.py), which defines
//     `setup(config: memoryview) -> (kind, bytes)` and
//     `execute(request: memoryview, buffers: list) -> (kind, bytes, ns, ns)`,
//     and a list `after_reply` that the worker empties after each reply.
//   - Methods marked "blocking" must be called without any GIL held: workers
//     take the main GIL when they start and when they exit.
//   - The completion thread calls `on_complete` for finished calls that have a
//     `completion_owner`; that callback takes the main GIL itself.
#pragma once

#include <Python.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/call.hpp"
#include "core/call_log.hpp"
#include "core/job_queue.hpp"
#include "core/live_feed.hpp"
#include "core/status_board.hpp"

namespace interp_rpc::core {

struct pool_options {
  int workers = 4;
  PyInterpreterState* main_interpreter = nullptr;
  std::string bootstrap_source;    // Python source run in each new interpreter
  std::string bootstrap_filename;  // shown in tracebacks from that source
  std::string setup_request;       // passed to setup() (pickled by the caller)
  std::size_t call_log_capacity = 16384;
};

// How one worker's start-up went.
struct init_report {
  int index = 0;
  bool finished = false;   // false: still running when wait_ready timed out
  bool ok = false;
  int reply_kind = 0;      // setup()'s kind when it ran
  std::string reply;       // setup()'s reply, or an engine message
  std::int64_t interpreter_id = -1;
};

// A worker still running a call when close() gave up waiting.
struct stuck_worker {
  int index;
  std::string target;
  double busy_seconds;
};

// Test hooks (interp_rpc.testing): make a worker fail the way a broken
// thread would.
enum class worker_fault : std::uint8_t {
  none,
  exit_now,          // the worker's thread ends as soon as it is idle
  die_on_next_call,  // the worker takes its next call and dies holding it
};

using completion_callback = std::function<void(std::vector<call_ptr>&)>;

class pool {
 public:
  // Starts nothing: the owner registers the pool first (see start()).
  pool(pool_options options, completion_callback on_complete);
  pool(const pool&) = delete;
  pool& operator=(const pool&) = delete;
  // Blocking, must be called without any GIL: closes (cancelling queued
  // calls) and joins every thread. An owner that cannot afford to wait keeps
  // the pool alive until close() reported that no worker is stuck.
  ~pool();

  // Starts the completion thread, then the worker threads. Call once.
  // A thread that cannot start (thread_start.hpp) fails the pool's start-up
  // without throwing: every worker left without a thread is reported by
  // wait_ready() as failed, with the reason, and counts as dead and exited;
  // the pool closes, cancelling whatever was queued, and the threads that
  // did start end once their setup() is done.
  void start();

  // Blocking. Waits until every worker finished setup() or the timeout passed.
  std::vector<init_report> wait_ready(std::int64_t timeout_ns);
  // Whether every worker finished setup() (the non-blocking form).
  bool ready() const;

  // Queues a call for any worker, or (worker >= 0) for that worker only;
  // a call for a dead or missing worker is refused as broken.
  job_queue::push_result submit(const call_ptr& c, int worker = -1);
  // Queues calls for any worker together (job_queue::push_many), all or none.
  job_queue::push_result submit_many(const std::vector<call_ptr>& calls);
  // Fails a call as cancelled if no worker has taken it yet.
  bool cancel(const call_ptr& c);

  // Closing, in three steps that any number of threads may run at once
  // (close() is all three):
  //   begin_close  never waits: stops accepting calls; with cancel_pending,
  //                fails queued calls as cancelled, else workers finish them;
  //   wait_exited  blocking: waits up to timeout_ns (< 0: forever) for every
  //                worker thread to end; returns whether they all did;
  //   finish_close never waits on a running thread: joins the threads that
  //                ended and returns the workers still running a call.
  // Once finish_close() returned no stuck worker from a thread other than
  // the completion thread, every thread is joined: finished() is true.
  void begin_close(bool cancel_pending);
  bool wait_exited(std::int64_t timeout_ns);
  std::vector<stuck_worker> finish_close();
  std::vector<stuck_worker> close(bool cancel_pending, std::int64_t timeout_ns);
  bool closing() const { return m_shared->queue.closed(); }
  bool finished() const;
  // Whether the calling thread is this pool's completion thread (which must
  // never wait for itself).
  bool on_completion_thread() const noexcept;

  std::vector<worker_snapshot> status() const { return m_shared->board.snapshot(); }
  // The status board and call log, for live displays on other threads.
  live_feed feed() const;
  std::vector<call_record> records_after(std::uint64_t after_seq) const {
    return m_shared->log.records_after(after_seq);
  }
  call_totals totals() const { return m_shared->log.totals(); }
  void clear_records() { m_shared->log.clear(); }
  std::size_t queued() const { return m_shared->queue.size(); }
  int workers() const noexcept { return m_shared->options.workers; }
  int alive() const;
  bool broken() const noexcept { return m_shared->broken.load(); }
  std::vector<std::int64_t> interpreter_ids() const;

  bool inject_fault(int index, worker_fault fault);

  // Raises SystemExit inside the calls that the given workers are running
  // (or inside their setup()), for an orderly exit of the process (it is not
  // a way to cancel calls: target code may catch it, and code blocked in C
  // only sees it when it returns to Python). Gives up after timeout_ns
  // (< 0: no limit) if a worker never yields its GIL. Returns the workers it
  // was raised in. Throws thread_start_error, having raised nothing, if its
  // helper thread cannot start.
  std::vector<int> interrupt(const std::vector<int>& indices, std::int64_t timeout_ns);

 private:
  // Everything a worker thread touches, shared so that a worker stuck past
  // close() never outlives it.
  struct shared_state {
    shared_state(pool_options options, completion_callback on_complete);

    const pool_options options;
    const completion_callback on_complete;
    job_queue queue;
    status_board board;
    call_log log;
    std::atomic<bool> broken{false};
    // A worker stands by to share a caller's copy (one at a time: each
    // spins, and two spinners on two cores would leave the caller none).
    std::atomic<bool> copy_helper_standing{false};

    mutable std::mutex mutex;  // guards everything below
    std::condition_variable changed;
    std::vector<init_report> init;
    std::vector<bool> exited;
    std::vector<std::int64_t> interpreter_ids;
    int alive;
    std::vector<worker_fault> faults;

    // Guards the worker interpreters that interrupt() may attach to; a
    // worker takes it before ending its interpreter.
    std::mutex teardown_gate;
    std::vector<PyInterpreterState*> interpreters;
    std::vector<unsigned long> thread_idents;

    std::mutex completion_mutex;
    std::condition_variable completion_cv;
    std::deque<call_ptr> completions;
    bool completion_stop = false;

    // Records the outcome, wakes the caller and queues the completion
    // callback when the call has an owner.
    void finish(const call_ptr& c, call_outcome outcome, int reply_kind, std::string reply,
                int worker_index);
    void worker_died(int index, const std::string& detail);
    // Workers from `first` on have no thread: each is reported as failed to
    // start (with `first_reason`, the others with `other_reason`), dead, and
    // exited.
    void never_started(int first, const std::string& first_reason,
                       const std::string& other_reason);
    worker_fault take_fault(int index);
    worker_fault peek_fault(int index);
    bool all_exited_locked() const;
  };

  static void worker_main(std::shared_ptr<shared_state> shared, int index);
  // A worker whose reply lent a large value, with nothing else to do: takes a
  // share of the caller's copy of it, unless another worker stands by already.
  static void stand_by_to_copy(shared_state& s, held_result& held);
  static void completion_main(std::shared_ptr<shared_state> shared);

  std::shared_ptr<shared_state> m_shared;
  // Joining: one thread at a time, and never a thread that is still running.
  mutable std::mutex m_join_mutex;
  std::vector<std::thread> m_threads;
  std::thread m_completion_thread;
  std::atomic<std::thread::id> m_completion_id{};
};

}  // namespace interp_rpc::core
