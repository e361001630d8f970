#include "core/pool.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#include "core/buffer_lease.hpp"
#include "core/clock.hpp"
#include "core/codes.hpp"
#include "core/fault_injection.hpp"
#include "core/free_memory.hpp"
#include "core/python_ref.hpp"
#include "core/subinterpreter.hpp"
#include "core/worker_python.hpp"
#include "core/thread_start.hpp"

namespace interp_rpc::core {

namespace {

constexpr int reply_ok = reply_kind_ok;
constexpr int reply_engine_error = reply_kind_engine_error;

// The longest wait_ready() waits, once every worker is set up, for them all
// to wait in the queue (they get there within microseconds, unless the
// machine is loaded).
constexpr std::int64_t ready_wait_limit_ns = 1'000'000'000;

// After a reply that lends a large value, its worker stands by to share the
// caller's copy (shared_copy.hpp) this long at most: time for a sleeping
// caller to wake and start it. A call queued meanwhile ends the wait (seen
// within a poll), and so does the caller's read or its dropping the call.
// It spins all along: a sleeping helper would wake too late to take a share.
constexpr std::int64_t copy_stand_by_ns = 2'000'000;
constexpr std::int64_t copy_stand_by_poll_ns = 100'000;
constexpr std::int64_t copy_stand_by_spin_ns = copy_stand_by_ns;

}  // namespace

// ---------------------------------------------------------------- copy helper

void pool::stand_by_to_copy(shared_state& s, held_result& held) {
  bool nobody = false;
  if (!s.copy_helper_standing.compare_exchange_strong(nobody, true)) return;
  {
    gil_released unlocked;
    held.help_copy(now_ns() + copy_stand_by_ns, [&s] { return s.queue.size() > 0; },
                   copy_stand_by_poll_ns, copy_stand_by_spin_ns);
  }
  s.copy_helper_standing.store(false);
}

// ---------------------------------------------------------------- shared state

pool::shared_state::shared_state(pool_options options_, completion_callback on_complete_)
    : options(std::move(options_)),
      on_complete(std::move(on_complete_)),
      queue(options.workers),
      board(options.workers),
      log(options.call_log_capacity),
      init(static_cast<std::size_t>(options.workers)),
      exited(static_cast<std::size_t>(options.workers), false),
      interpreter_ids(static_cast<std::size_t>(options.workers), -1),
      alive(options.workers),
      faults(static_cast<std::size_t>(options.workers), worker_fault::none),
      interpreters(static_cast<std::size_t>(options.workers), nullptr),
      thread_idents(static_cast<std::size_t>(options.workers), 0) {
  for (int i = 0; i < options.workers; ++i) init[static_cast<std::size_t>(i)].index = i;
}

void pool::shared_state::finish(const call_ptr& c, call_outcome outcome, int reply_kind,
                                std::string reply, int worker_index) {
  if (c->done()) return;  // queue removal makes every path exclusive; this is a guard
  if (c->timing.finished_ns == 0) c->timing.finished_ns = now_ns();
  // Log before waking the caller, so stats() read right after a call sees it.
  log.add(*c, outcome, reply_kind, worker_index);
  // Read before completing: once complete, the caller may settle the call and
  // clear what this looks at.
  const bool needs_completion = c->needs_completion();
  if (!c->complete(outcome, reply_kind, std::move(reply), worker_index)) return;
  if (!needs_completion) return;
  {
    std::lock_guard lock(completion_mutex);
    completions.push_back(c);
  }
  completion_cv.notify_one();
}

void pool::shared_state::worker_died(int index, const std::string& detail) {
  board.mark_dead(index, detail);
  for (const call_ptr& c : queue.close_lane(index)) {
    finish(c, call_outcome::worker_died,
           0, "worker " + std::to_string(index) + " died before running it: " + detail, index);
  }
  bool now_broken = false;
  {
    std::lock_guard lock(mutex);
    alive -= 1;
    now_broken = alive == 0;
  }
  if (now_broken) {
    broken.store(true);
    for (const call_ptr& c : queue.break_and_drain()) {
      finish(c, call_outcome::pool_broken, 0, "every worker of the pool has died", -1);
    }
  }
  changed.notify_all();
}

void pool::shared_state::never_started(int first, const std::string& first_reason,
                                       const std::string& other_reason) {
  for (int i = first; i < options.workers; ++i) {
    const std::string& reason = i == first ? first_reason : other_reason;
    {
      std::lock_guard lock(mutex);
      init_report& r = init[static_cast<std::size_t>(i)];
      r.finished = true;
      r.ok = false;
      r.reply_kind = reply_engine_error;
      r.reply = reason;
      exited[static_cast<std::size_t>(i)] = true;
    }
    worker_died(i, reason);
  }
}

bool pool::shared_state::all_exited_locked() const {
  for (bool e : exited) {
    if (!e) return false;
  }
  return true;
}

worker_fault pool::shared_state::take_fault(int index) {
  std::lock_guard lock(mutex);
  return std::exchange(faults[static_cast<std::size_t>(index)], worker_fault::none);
}

worker_fault pool::shared_state::peek_fault(int index) {
  std::lock_guard lock(mutex);
  return faults[static_cast<std::size_t>(index)];
}

// ---------------------------------------------------------------- threads

void pool::worker_main(std::shared_ptr<shared_state> shared, int index) {
  shared_state& s = *shared;
  const auto slot = static_cast<std::size_t>(index);
  bool died = false;
  std::string death;
  {
    main_thread_state main(s.options.main_interpreter);
    // Held while the interpreter ends (declared first, released last), so that
    // interrupt() never attaches to an interpreter being destroyed.
    std::unique_lock<std::mutex> gate(s.teardown_gate, std::defer_lock);
    own_subinterpreter interp(main, fault_injection::fail_interpreter_creation(index));
    if (!interp.ok()) {
      std::lock_guard lock(s.mutex);
      s.init[slot].finished = true;
      s.init[slot].reply_kind = reply_engine_error;
      s.init[slot].reply = "could not create the subinterpreter: " + interp.error();
      died = true;
      death = s.init[slot].reply;
    }
    if (died) {
      s.worker_died(index, death);
    } else {
      // Reachable by interrupt() from here on, setup() included: an init
      // that hangs must not outlive the process's exit either.
      {
        std::lock_guard registered(s.teardown_gate);
        s.interpreters[slot] = PyThreadState_GetInterpreter(interp.thread_state());
        s.thread_idents[slot] = PyThread_get_thread_ident();
      }
      int kind = reply_ok;
      std::string reply;
      worker_functions worker = bootstrap(s.options, kind, reply);
      py_ref lease_type = worker ? make_lease_type() : py_ref();
      if (worker && !lease_type) {
        kind = reply_engine_error;
        reply = take_python_error();
        worker = {};
      }
      // Idle before the report goes out: whoever waits for the pool to be
      // ready must not see a ready worker as still starting.
      if (worker) s.board.set_state(index, worker_state::idle);
      {
        std::lock_guard lock(s.mutex);
        s.interpreter_ids[slot] = interp.id();
        init_report& r = s.init[slot];
        r.finished = true;
        r.ok = static_cast<bool>(worker);
        r.reply_kind = kind;
        r.reply = reply;
        r.interpreter_id = interp.id();
      }
      s.changed.notify_all();
      if (!worker) {
        died = true;
        death = "setup failed";
        s.worker_died(index, death);
      }
      // The values this worker's replies hold until their callers copy them.
      std::vector<std::shared_ptr<held_result>> lent;
      while (!died) {
        // Read the wake-up generation before looking at faults, so a fault
        // injected after this point makes pop() return at once.
        const unsigned generation = s.queue.generation();
        if (s.peek_fault(index) == worker_fault::exit_now) {
          s.take_fault(index);
          died = true;
          death = "its thread failed (injected fault: exit_now)";
          s.worker_died(index, death);
          break;
        }
        call_ptr c;
        {
          gil_released unlocked;
          c = s.queue.pop(index, generation);
        }
        // Before the next call, or when woken by a caller that copied (or
        // dropped) values lent to it.
        std::erase_if(lent, [](const auto& held) { return held->release_if_done(); });
        if (!c) {
          // Closed and nothing left for this worker: it stops. Only an
          // exit_now fault still has a say (the loop's top handles it); a
          // die_on_next_call fault waits for a call that will never come.
          if (s.queue.closed() && s.peek_fault(index) != worker_fault::exit_now) break;
          continue;
        }
        if (s.peek_fault(index) == worker_fault::die_on_next_call) {
          s.take_fault(index);
          died = true;
          death = "its thread failed while running a call (injected fault: die_on_next_call)";
          // Dead (and the pool broken, if it was the last) before the call
          // fails, so that whoever sees WorkerDiedError sees a dead worker.
          s.worker_died(index, death);
          s.finish(c, call_outcome::worker_died, 0, "worker " + std::to_string(index) + " died: " + death, index);
          break;
        }
        c->timing.started_ns = now_ns();
        s.board.begin_call(index, c->id, c->target, c->item_index, c->timing.started_ns);
        int call_kind = reply_ok;
        std::string call_reply;
        run_call(worker, lease_type.get(), *c, call_kind, call_reply);
        held_result* lent_now = nullptr;  // kept alive by `lent`
        if (c->held) {
          c->held->when_done([shared] { shared->queue.wake_up(); });
          lent.push_back(c->held);
          lent_now = c->held.get();
        }
        c->timing.finished_ns = now_ns();
        s.board.end_call(index, c->timing.finished_ns);
        s.finish(c, call_outcome::replied, call_kind, std::move(call_reply), index);
        release_after_reply(worker);
        if (lent_now != nullptr && lent_now->worth_helping()) stand_by_to_copy(s, *lent_now);
      }
      // Whatever a caller has not copied yet stays readable after this
      // interpreter is gone.
      for (const auto& held : lent) held->detach();
      lent.clear();
      worker = {};
      lease_type = py_ref();
      {
        // Take the gate detached: an interrupt() holding it may be waiting
        // for this interpreter's GIL.
        gil_released unlocked;
        gate.lock();
      }
      s.interpreters[slot] = nullptr;
    }
    // Leaving this scope ends the interpreter, then re-attaches and deletes
    // the main thread state: both need the main GIL, which the thread that
    // waits for us (close()) does not hold.
  }
  if (!died) s.board.set_state(index, worker_state::stopped);
  {
    std::lock_guard lock(s.mutex);
    s.exited[slot] = true;
  }
  s.changed.notify_all();
}

void pool::completion_main(std::shared_ptr<shared_state> shared) {
  shared_state& s = *shared;
  std::vector<call_ptr> batch;
  while (true) {
    {
      std::unique_lock lock(s.completion_mutex);
      s.completion_cv.wait(lock, [&] { return !s.completions.empty() || s.completion_stop; });
      if (s.completions.empty()) return;
      batch.assign(std::make_move_iterator(s.completions.begin()),
                   std::make_move_iterator(s.completions.end()));
      s.completions.clear();
    }
    s.on_complete(batch);
    batch.clear();
  }
}

// ---------------------------------------------------------------- pool

pool::pool(pool_options options, completion_callback on_complete)
    : m_shared(std::make_shared<shared_state>(std::move(options), std::move(on_complete))) {}

void pool::start() {
  std::lock_guard joining(m_join_mutex);
  const int n = m_shared->options.workers;
  m_threads.reserve(static_cast<std::size_t>(n));
  try {
    m_completion_thread = start_thread("the pool's completion thread", &pool::completion_main, m_shared);
    m_completion_id.store(m_completion_thread.get_id());
    for (int i = 0; i < n; ++i) {
      m_threads.push_back(
          start_thread("worker " + std::to_string(i) + "'s thread", &pool::worker_main, m_shared, i));
    }
  } catch (const thread_start_error& e) {
    // m_threads[i] is worker i's thread: the workers after them have none.
    const bool completion_started = m_completion_thread.joinable();
    m_shared->never_started(static_cast<int>(m_threads.size()), e.what(),
                            completion_started ? "not started, since " + e.thread() + " could not start"
                                               : std::string("not started: ") + e.what());
    begin_close(true);
  }
}

pool::~pool() {
  close(true, -1);
  // Only a pool destroyed on its own completion thread (which cannot join
  // itself, nor the others: see finish_close) still has threads here. Each
  // of them has ended or is ending, and holds the shared state it needs.
  std::lock_guard joining(m_join_mutex);
  for (auto& t : m_threads) {
    if (t.joinable()) t.detach();
  }
  if (m_completion_thread.joinable()) m_completion_thread.detach();
}

std::vector<init_report> pool::wait_ready(std::int64_t timeout_ns) {
  shared_state& s = *m_shared;
  const std::int64_t started = now_ns();
  std::vector<init_report> reports;
  {
    std::unique_lock lock(s.mutex);
    const auto all_finished = [&] {
      for (const auto& r : s.init) {
        if (!r.finished) return false;
      }
      return true;
    };
    const bool finished =
        timeout_ns < 0 ? (s.changed.wait(lock, all_finished), true)
                       : s.changed.wait_for(lock, std::chrono::nanoseconds(timeout_ns), all_finished);
    reports = s.init;
    if (!finished) return reports;
  }
  // Then, for as long as the timeout allows (a second at most), until every
  // worker that was set up waits in the queue: a call submitted from then on
  // is handed to an idle worker at once. A worker preempted between its setup
  // and its first pop() otherwise left every call of a burst queued, and a
  // shutdown(cancel_futures=True) right after cancelled them all (on a
  // loaded machine). Bounded: the pool is ready once set up, whatever this
  // wait sees.
  const auto set_up = static_cast<std::size_t>(
      std::count_if(reports.begin(), reports.end(), [](const init_report& r) { return r.ok; }));
  const std::int64_t now = now_ns();
  const std::int64_t until =
      now + (timeout_ns < 0 ? ready_wait_limit_ns
                            : std::min(ready_wait_limit_ns, timeout_ns - (now - started)));
  while (s.queue.waiting() < set_up && now_ns() < until) {
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  return reports;
}

bool pool::ready() const {
  std::lock_guard lock(m_shared->mutex);
  for (const auto& r : m_shared->init) {
    if (!r.finished) return false;
  }
  return true;
}

job_queue::push_result pool::submit(const call_ptr& c, int worker) {
  c->timing.enqueued_ns = now_ns();
  if (worker >= workers()) return job_queue::push_result::broken;
  // A dead worker's lane is closed under the queue's lock (worker_died), so
  // this push is refused or handed back, never stranded.
  return m_shared->queue.push(c, worker);
}

job_queue::push_result pool::submit_many(const std::vector<call_ptr>& calls) {
  const std::int64_t now = now_ns();
  for (const call_ptr& c : calls) c->timing.enqueued_ns = now;
  return m_shared->queue.push_many(calls);
}

bool pool::cancel(const call_ptr& c) {
  if (!m_shared->queue.remove(c)) return false;
  m_shared->finish(c, call_outcome::cancelled, 0, "the call was cancelled before it ran", -1);
  return true;
}

void pool::begin_close(bool cancel_pending) {
  shared_state& s = *m_shared;
  if (cancel_pending) {
    for (const call_ptr& c : s.queue.close_and_drain()) {
      s.finish(c, call_outcome::cancelled, 0, "the pool was closed before the call ran", -1);
    }
  } else {
    s.queue.close();
  }
}

bool pool::wait_exited(std::int64_t timeout_ns) {
  shared_state& s = *m_shared;
  std::unique_lock lock(s.mutex);
  const auto all_exited = [&] { return s.all_exited_locked(); };
  if (timeout_ns < 0) {
    s.changed.wait(lock, all_exited);
    return true;
  }
  return s.changed.wait_for(lock, std::chrono::nanoseconds(timeout_ns), all_exited);
}

std::vector<stuck_worker> pool::finish_close() {
  shared_state& s = *m_shared;
  std::vector<bool> exited;
  {
    std::lock_guard lock(s.mutex);
    exited = s.exited;
  }
  std::vector<stuck_worker> stuck;
  const auto snapshot = s.board.snapshot();
  const auto add_stuck = [&](std::size_t i) {
    stuck.push_back({static_cast<int>(i), snapshot[i].target, snapshot[i].busy_seconds});
  };
  if (on_completion_thread()) {
    // Python code run by the completion thread (unpickling a reply) closed
    // the pool. Another closer may be joining this very thread while it holds
    // the join lock: join nothing here, a later close() does.
    for (std::size_t i = 0; i < exited.size(); ++i) {
      if (!exited[i]) add_stuck(i);
    }
    return stuck;
  }
  std::lock_guard joining(m_join_mutex);
  for (std::size_t i = 0; i < m_threads.size(); ++i) {
    if (exited[i]) {
      // It has set `exited` as its last step: this join does not wait on
      // Python or on a call.
      if (m_threads[i].joinable()) m_threads[i].join();
    } else {
      add_stuck(i);
    }
  }
  if (stuck.empty() && m_completion_thread.joinable()) {
    {
      std::lock_guard lock(s.completion_mutex);
      s.completion_stop = true;
    }
    s.completion_cv.notify_all();
    m_completion_thread.join();
    return_free_memory_to_os();  // every thread of this pool has ended
  }
  return stuck;
}

std::vector<stuck_worker> pool::close(bool cancel_pending, std::int64_t timeout_ns) {
  begin_close(cancel_pending);
  wait_exited(timeout_ns);
  return finish_close();
}

bool pool::finished() const {
  std::lock_guard joining(m_join_mutex);
  if (m_completion_thread.joinable()) return false;
  for (const auto& t : m_threads) {
    if (t.joinable()) return false;
  }
  return true;
}

bool pool::on_completion_thread() const noexcept {
  return std::this_thread::get_id() == m_completion_id.load();
}

live_feed pool::feed() const {
  // Aliasing pointers: each keeps the whole shared state alive.
  return live_feed{std::shared_ptr<const status_board>(m_shared, &m_shared->board),
                   std::shared_ptr<const call_log>(m_shared, &m_shared->log)};
}

int pool::alive() const {
  std::lock_guard lock(m_shared->mutex);
  return m_shared->alive;
}

std::vector<std::int64_t> pool::interpreter_ids() const {
  std::lock_guard lock(m_shared->mutex);
  return m_shared->interpreter_ids;
}

std::vector<int> pool::interrupt(const std::vector<int>& indices, std::int64_t timeout_ns) {
  // The work runs on its own thread: attaching to a worker's interpreter waits
  // for its GIL, which a call stuck in C code may never release.
  struct progress {
    std::mutex mutex;
    std::condition_variable cv;
    std::vector<int> raised;
    bool finished = false;
  };
  auto state = std::make_shared<progress>();
  start_thread("the thread that interrupts workers", [shared = m_shared, indices, state] {
    std::vector<int> raised;
    {
      std::lock_guard gate(shared->teardown_gate);
      for (int index : indices) {
        const auto slot = static_cast<std::size_t>(index);
        if (slot >= shared->interpreters.size() || shared->interpreters[slot] == nullptr) continue;
        thread_state_visit visit(shared->interpreters[slot]);
        if (PyThreadState_SetAsyncExc(shared->thread_idents[slot], PyExc_SystemExit) == 1) {
          raised.push_back(index);
        }
      }
    }
    std::lock_guard lock(state->mutex);
    state->raised = std::move(raised);
    state->finished = true;
    state->cv.notify_all();
  }).detach();
  std::unique_lock lock(state->mutex);
  if (timeout_ns < 0) {
    state->cv.wait(lock, [&] { return state->finished; });
  } else {
    state->cv.wait_for(lock, std::chrono::nanoseconds(timeout_ns), [&] { return state->finished; });
  }
  return state->raised;
}

bool pool::inject_fault(int index, worker_fault fault) {
  if (index < 0 || index >= workers()) return false;
  {
    std::lock_guard lock(m_shared->mutex);
    // A dying worker is marked dead before its thread ends: refuse it too.
    if (m_shared->exited[static_cast<std::size_t>(index)] ||
        m_shared->board.state(index) == worker_state::dead) {
      return false;
    }
    m_shared->faults[static_cast<std::size_t>(index)] = fault;
  }
  m_shared->queue.wake_up();
  return true;
}

}  // namespace interp_rpc::core
