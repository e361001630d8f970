// interp_rpc._core: the pybind11 face of the C++ engine (main interpreter only).
//
// Every method that waits releases the GIL: workers need the main GIL when
// they start and stop, and a caller blocked on a reply must not stall the
// rest of the program. Waits on the main thread wake every 50 ms to run
// signal handlers, so Ctrl-C (and the kernel's interrupt) stop a wait: a
// call, wait_ready() and close() alike.
//
// Ownership: one registry holds every engine's pool, from before its worker
// threads start until a close() saw every thread end. The Python Engine
// object only uses the pool; when it is collected unclosed, its pool starts
// closing and stays registered, and the exit routine (_pool/exit_status.py)
// closes whatever is still registered. No thread is ever detached.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "_core_calls.hpp"
#include "_core_drain.hpp"
#include "core/arena_cache.hpp"
#include "core/argument_copy.hpp"
#include "core/build_info.hpp"
#include "core/clock.hpp"
#include "core/codes.hpp"
#include "core/held_result.hpp"
#include "core/stoppable_items.hpp"
#include "core/live_feed.hpp"
#include "core/live_view.hpp"
#include "core/packed_column.hpp"
#include "core/pool.hpp"
#include "core/thread_start.hpp"

namespace py = pybind11;
namespace core = interp_rpc::core;
using namespace interp_rpc::binding;

namespace {

// The one owner of every engine's pool (see the top of this file). Never
// destroyed: at process exit it must not join threads from a static
// destructor; the exit routine has closed what it could by then.
class pool_registry {
 public:
  void add(std::shared_ptr<core::pool> p) {
    std::lock_guard lock(m_mutex);
    m_pools.push_back(std::move(p));
  }
  // Drops pools whose threads have all been joined. Call without the GIL:
  // the last reference to a pool may go here.
  void forget_finished() {
    std::vector<std::shared_ptr<core::pool>> finished;
    {
      std::lock_guard lock(m_mutex);
      const auto is_finished = [](const std::shared_ptr<core::pool>& p) { return p->finished(); };
      for (const auto& p : m_pools) {
        if (is_finished(p)) finished.push_back(p);
      }
      std::erase_if(m_pools, is_finished);
    }
  }
  // Joins the threads of pools that are closing and whose workers all ended
  // (a collected engine's pool), then drops the finished ones. Never waits
  // on a running thread. Call without the GIL.
  void reap() {
    for (const auto& p : snapshot()) {
      if (p->closing() && !p->on_completion_thread() && p->wait_exited(0)) p->finish_close();
    }
    forget_finished();
  }
  std::vector<std::shared_ptr<core::pool>> snapshot() const {
    std::lock_guard lock(m_mutex);
    return m_pools;
  }

 private:
  mutable std::mutex m_mutex;
  std::vector<std::shared_ptr<core::pool>> m_pools;
};

pool_registry& registry() {
  static auto* const instance = new pool_registry;
  return *instance;
}

// A map's count of items done, read from its engine's call log.
struct map_counter {
  std::shared_ptr<const core::call_log> log;
  core::map_item_counter counter;

  std::int64_t update() { return counter.update(*log); }
};

class engine {
 public:
  engine(int workers, std::string bootstrap_source, std::string bootstrap_filename,
         const py::bytes& setup_request) {
    if (workers < 1) throw py::value_error("workers must be at least 1");
    core::pool_options options;
    options.workers = workers;
    options.main_interpreter = PyInterpreterState_Main();
    options.bootstrap_source = std::move(bootstrap_source);
    options.bootstrap_filename = std::move(bootstrap_filename);
    options.setup_request = setup_request;
    core::install_arena_cache();  // holding the GIL, before any worker starts
    py::gil_scoped_release unlocked;
    registry().reap();
    m_pool = std::make_shared<core::pool>(std::move(options), settle_completed);
    // Owned before any thread exists: whatever happens to this object, the
    // registry still knows the threads.
    registry().add(m_pool);
    m_pool->start();
    m_owner = true;
  }

  // Another handle on a registered pool (for the exit routine): using it
  // never closes the pool.
  explicit engine(std::shared_ptr<core::pool> p) : m_pool(std::move(p)) {}

  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;

  // A collected, unclosed engine: its pool stops taking calls and its
  // workers end once they finished what is queued (as ThreadPoolExecutor's
  // do). The registry still holds it, so nothing waits here.
  ~engine() {
    if (m_owner && !m_pool->closing()) m_pool->begin_close(false);
  }

  py::list wait_ready(std::optional<double> timeout) {
    wait_interruptibly([&](std::int64_t slice) {
      m_pool->wait_ready(slice);
      return m_pool->ready();
    }, timeout);
    std::vector<core::init_report> reports;
    {
      py::gil_scoped_release unlocked;
      reports = m_pool->wait_ready(0);
    }
    py::list out;
    for (const auto& r : reports) {
      py::dict d;
      d["index"] = r.index;
      d["finished"] = r.finished;
      d["ok"] = r.ok;
      d["kind"] = r.reply_kind;
      d["reply"] = py::bytes(r.reply);
      d["interpreter_id"] = r.interpreter_id;
      out.append(d);
    }
    return out;
  }

  // Queues a call. Returns ("queued", handle), or ("closed"/"broken", None).
  py::tuple submit(std::string target, const py::bytes& request, const py::list& buffers,
                   std::int64_t item_index, std::int64_t item_count, const py::object& owner,
                   std::int64_t submitted_ns, std::int64_t serialize_ns, int worker) {
    core::call_ptr c = make_call(std::move(target), request, buffers, item_index, item_count,
                                 submitted_ns, serialize_ns);
    if (!owner.is_none()) c->completion_owner = owner.inc_ref().ptr();
    const char* refused = push(c, worker);
    if (refused != nullptr) return py::make_tuple(refused, py::none());
    return py::make_tuple("queued", call_handle(c));
  }

  // Queues calls for any worker together, all or none: each of `calls` is
  // (target, request, buffers, item_index, item_count, submitted_ns,
  // serialize_ns). Returns ("queued", [handles]), or ("closed"/"broken", None).
  py::tuple submit_many(const py::list& calls) {
    std::vector<core::call_ptr> made;
    made.reserve(calls.size());
    const auto release_made = [&] {
      for (const core::call_ptr& c : made) {
        c->try_claim();
        release_call_resources(*c, c->target);
      }
    };
    try {
      for (const py::handle& entry : calls) {
        const auto fields = entry.cast<py::tuple>();
        made.push_back(make_call(fields[0].cast<std::string>(), fields[1].cast<py::bytes>(),
                                 fields[2].cast<py::list>(), fields[3].cast<std::int64_t>(),
                                 fields[4].cast<std::int64_t>(), fields[5].cast<std::int64_t>(),
                                 fields[6].cast<std::int64_t>()));
      }
    } catch (...) {
      release_made();
      throw;
    }
    const auto result = m_pool->submit_many(made);
    if (result != core::job_queue::push_result::queued) {
      release_made();
      return py::make_tuple(result == core::job_queue::push_result::closed ? "closed" : "broken",
                            py::none());
    }
    py::list handles(made.size());
    for (std::size_t i = 0; i < made.size(); ++i) handles[i] = py::cast(call_handle(made[i]));
    return py::make_tuple("queued", handles);
  }

  // submit() and wait in one step, for pool.call(): no handle object, no
  // future. Returns (status, reply_kind, reply, worker, call_id); status is
  // one of the call_status codes.
  py::tuple call(std::string target, const py::bytes& request, const py::list& buffers,
                 std::optional<double> timeout, std::int64_t submitted_ns, std::int64_t serialize_ns) {
    core::call_ptr c = make_call(std::move(target), request, buffers, -1, 1, submitted_ns, serialize_ns);
    const char* refused = push(c);
    if (refused != nullptr) {
      const int status = std::string(refused) == "closed" ? status_closed : status_broken;
      return py::make_tuple(status, 0, py::none(), -1, c->id);
    }
    call_handle waiting(c);
    if (!waiting.wait(timeout)) return py::make_tuple(status_timed_out, 0, py::none(), -1, c->id);
    if (waiting.claim()) waiting.release();
    return py::make_tuple(status_of(c->outcome()), c->reply_kind(), reply_of(*c),
                          c->worker_index(), c->id);
  }

  bool cancel(call_handle& handle) { return m_pool->cancel(handle.get()); }

  // Safe from any number of threads at once; interruptible on the main
  // thread (the pool then goes on closing, and stays registered).
  py::list close(bool cancel_pending, std::optional<double> timeout) {
    {
      py::gil_scoped_release unlocked;
      m_pool->begin_close(cancel_pending);
    }
    wait_interruptibly([&](std::int64_t slice) { return m_pool->wait_exited(slice); }, timeout);
    std::vector<core::stuck_worker> stuck;
    {
      py::gil_scoped_release unlocked;
      stuck = m_pool->finish_close();
      if (stuck.empty()) registry().forget_finished();
    }
    py::list out;
    for (const auto& w : stuck) out.append(py::make_tuple(w.index, w.target, w.busy_seconds));
    return out;
  }

  py::list status() const {
    std::vector<core::worker_snapshot> snapshot;
    {
      py::gil_scoped_release unlocked;
      snapshot = m_pool->status();
    }
    py::list out;
    for (const auto& w : snapshot) {
      py::dict d;
      d["index"] = w.index;
      d["state"] = core::to_string(w.state);
      d["call_id"] = w.call_id;
      d["target"] = w.target.empty() ? py::object(py::none()) : py::object(py::str(w.target));
      d["item_index"] = w.item_index < 0 ? py::object(py::none()) : py::object(py::int_(w.item_index));
      d["busy_seconds"] = w.busy_seconds;
      d["calls_done"] = w.calls_done;
      d["busy_seconds_total"] = w.busy_seconds_total;
      d["detail"] = w.detail.empty() ? py::object(py::none()) : py::object(py::str(w.detail));
      out.append(d);
    }
    return out;
  }

  // One plain tuple per record, fields in record_fields order: a profile
  // reads up to the whole log (16384 records) at once, and a dict per record
  // (and one more for its times) cost about 12 us each.
  py::list records(std::uint64_t after) const {
    const std::vector<core::call_record> records = m_pool->records_after(after);
    py::list out(records.size());
    // Most records share a few targets: one str object each.
    std::unordered_map<std::string_view, py::str> targets;
    // And one str per outcome.
    std::array<py::object, static_cast<std::size_t>(core::call_outcome::pool_broken) + 1> outcomes;
    const auto outcome_name = [&outcomes](core::call_outcome outcome) -> const py::object& {
      py::object& name = outcomes.at(static_cast<std::size_t>(outcome));
      if (!name) name = py::str(core::to_string(outcome));
      return name;
    };
    std::size_t i = 0;
    for (const auto& r : records) {
      auto target = targets.find(r.target);
      if (target == targets.end()) target = targets.emplace(r.target, py::str(r.target)).first;
      const core::call_timing& t = r.timing;
      out[i++] = py::make_tuple(
          r.seq, r.id, r.worker_index, target->second,
          r.item_index < 0 ? py::object(py::none()) : py::object(py::int_(r.item_index)),
          r.item_count, outcome_name(r.outcome), r.reply_kind, t.submitted_ns, t.enqueued_ns,
          t.started_ns, t.finished_ns, t.serialize_ns, t.deserialize_ns, t.result_serialize_ns);
    }
    return out;
  }

  py::dict totals() const {
    const auto t = m_pool->totals();
    py::dict d;
    d["calls"] = t.calls;
    d["items"] = t.items;
    d["replied"] = t.replied;
    d["failed"] = t.failed;
    d["queue_wait_ns"] = t.queue_wait_ns;
    d["run_ns"] = t.run_ns;
    d["serialize_ns"] = t.serialize_ns;
    d["deserialize_ns"] = t.deserialize_ns;
    d["result_serialize_ns"] = t.result_serialize_ns;
    return d;
  }

  // The live status display, rendered from a snapshot (see core/live_view.hpp).
  py::tuple render_live(const std::string& target, std::int64_t total, std::int64_t items_at_start,
                        std::int64_t started_ns, double stuck_after,
                        std::string note) const {
    core::live_progress progress;
    progress.target = target;
    progress.total = total;
    progress.done = static_cast<std::int64_t>(m_pool->totals().items) - items_at_start;
    progress.elapsed_seconds = static_cast<double>(core::now_ns() - started_ns) * 1e-9;
    const auto r = core::render_live_view(m_pool->status(), progress, stuck_after,
                                          std::move(note));
    return py::make_tuple(r.html, r.text);
  }

  // Counts one map's items done from the call log, by the rule the kernel's
  // live view counts them (core::map_item_counter).
  map_counter map_item_counter(std::uint64_t after_seq, std::uint64_t first_call_id) const {
    return map_counter{m_pool->feed().log, core::map_item_counter(after_seq, first_call_id)};
  }

  // A capsule the kernel uses to publish the live view from C++ threads.
  py::capsule live_feed() const {
    auto* feed = new core::live_feed(m_pool->feed());
    return py::capsule(feed, core::live_feed_capsule_name, [](void* p) {
      delete static_cast<core::live_feed*>(p);
    });
  }

  // Called at interpreter exit, where an exception would stop the exit
  // routine half-way: a helper thread that cannot start is a warning, and
  // nobody was interrupted.
  std::vector<int> interrupt(const std::vector<int>& indices, std::optional<double> timeout) {
    const std::int64_t limit = to_timeout_ns(timeout);
    try {
      py::gil_scoped_release unlocked;
      return m_pool->interrupt(indices, limit);
    } catch (const core::thread_start_error& e) {
      const std::string message = std::string("interp-rpc: no worker was interrupted: ") + e.what();
      if (PyErr_WarnEx(PyExc_RuntimeWarning, message.c_str(), 1) < 0) throw py::error_already_set();
      return {};
    }
  }

  bool inject_fault(int index, const std::string& kind) {
    if (kind == "exit_now") return m_pool->inject_fault(index, core::worker_fault::exit_now);
    if (kind == "die_on_next_call") return m_pool->inject_fault(index, core::worker_fault::die_on_next_call);
    throw py::value_error("unknown fault '" + kind + "': use 'exit_now' or 'die_on_next_call'");
  }

  core::pool& pool() { return *m_pool; }
  std::uint64_t last_call_id() const { return m_next_id; }

 private:
  core::call_ptr make_call(std::string target, const py::bytes& request, const py::list& buffers,
                           std::int64_t item_index, std::int64_t item_count,
                           std::int64_t submitted_ns, std::int64_t serialize_ns) {
    std::vector<core::buffer_view> views;
    // The call owns its buffers from here on; acquire_buffers fills them in.
    auto c = std::make_shared<core::call>(++m_next_id, std::move(target), std::string(request),
                                          std::vector<core::buffer_view>{}, item_index, item_count);
    if (!buffers.empty()) {
      acquire_buffers(buffers, *c, views);
      c->buffers = std::move(views);
      // Only a bytes-backed buffer is one the worker copies (wire.py: a
      // _Copied argument's buffer is the bytes itself, or a bytearray's
      // snapshot); a memoryview's buffer, which the worker reads in place,
      // is backed by the memoryview. A caller standing by for those would
      // only take a core from the worker.
      const bool copied_and_large =
          std::any_of(c->held_buffers.begin(), c->held_buffers.end(), [](const Py_buffer& b) {
            return b.obj != nullptr && PyBytes_CheckExact(b.obj) &&
                   core::worth_sharing_argument(b.len);
          });
      if (copied_and_large) c->argument_copy = std::make_unique<core::shared_copy>();
    }
    c->timing.submitted_ns = submitted_ns;
    c->timing.serialize_ns = serialize_ns;
    return c;
  }

  // Queues the call; on refusal releases what it holds and says why.
  const char* push(const core::call_ptr& c, int worker = -1) {
    const auto result = m_pool->submit(c, worker);
    if (result == core::job_queue::push_result::queued) return nullptr;
    c->try_claim();
    release_call_resources(*c, c->target);
    return result == core::job_queue::push_result::closed ? "closed" : "broken";
  }

  std::shared_ptr<core::pool> m_pool;
  bool m_owner = false;  // made by the constructor, not open_engines()
  std::uint64_t m_next_id = 0;
};

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "The C++ engine of interp-rpc.";
  set_main_thread(
      py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>());

  m.def(
      "build_info",
      [] {
        const auto info = core::get_build_info();
        py::dict d;
        d["interp_rpc"] = INTERP_RPC_VERSION;
        d["python"] = info.python_version;
        d["python_hexversion"] = info.python_hexversion;
        d["pybind11"] = std::to_string(PYBIND11_VERSION_MAJOR) + "." +
                        std::to_string(PYBIND11_VERSION_MINOR) + "." +
                        std::to_string(PYBIND11_VERSION_PATCH);
        d["compiler"] = info.compiler;
        d["cplusplus"] = info.cplusplus;
        d["sanitized"] = info.sanitized;
        return d;
      },
      "The versions interp-rpc's engine was compiled against.");

  // The codes shared with the Python layer (core/codes.hpp).
  m.attr("STATUS_REPLIED") = status_replied;
  m.attr("STATUS_WORKER_DIED") = code(core::call_status::worker_died);
  m.attr("STATUS_CANCELLED") = code(core::call_status::cancelled);
  m.attr("STATUS_POOL_BROKEN") = code(core::call_status::pool_broken);
  m.attr("STATUS_TIMED_OUT") = status_timed_out;
  m.attr("STATUS_CLOSED") = status_closed;
  m.attr("STATUS_BROKEN") = status_broken;
  // The order of the fields of Engine.records()'s tuples (interp_rpc.records.EngineRecord).
  m.attr("RECORD_FIELDS") = py::make_tuple(
      "seq", "id", "worker", "target", "item_index", "item_count", "outcome", "reply_kind",
      "submitted_ns", "enqueued_ns", "started_ns", "finished_ns", "serialize_ns", "deserialize_ns",
      "result_serialize_ns");
  // How many call records an engine keeps: a cluster's merged log keeps as many.
  m.attr("CALL_LOG_CAPACITY") = core::pool_options{}.call_log_capacity;
  m.attr("REPLY_OK") = core::reply_kind_ok;
  m.attr("REPLY_ENGINE_ERROR") = core::reply_kind_engine_error;

  m.def("monotonic_ns", &core::now_ns, "The engine's clock (the same as time.monotonic_ns()).");
  m.def("pages_moved", &core::held_result::pages_moved,
        "Pages of large results moved into the caller rather than copied, since the process "
        "started (core/held_result.hpp).");
  m.def("cached_arenas", &core::cached_arena_count,
        "Freed pymalloc arenas the process keeps for the next interpreter that needs one "
        "(core/arena_cache.hpp).");
  // The packer the workers use, for what the caller sends (_worker/columns.py).
  py::object pack_column = py::reinterpret_steal<py::object>(core::new_pack_column_function());
  if (!pack_column) throw py::error_already_set();
  m.attr("pack_column") = pack_column;
  // The chunk loops' items (core/stoppable_items.hpp), for worker processes.
  py::object stoppable_items =
      py::reinterpret_steal<py::object>(core::new_stoppable_items_type());
  if (!stoppable_items) throw py::error_already_set();
  m.attr("stoppable_items") = stoppable_items;
  py::object drain = py::reinterpret_steal<py::object>(new_drain_type());
  if (!drain) throw py::error_already_set();
  m.attr("drain") = drain;

  // The status tables' rules for "stuck" and "debugging" (core/live_view.hpp),
  // for what Python shows of a worker's state (WorkerStatus.displayed_state).
  m.attr("DEFAULT_STUCK_AFTER") = core::default_stuck_after_seconds;
  m.attr("DEBUG_SESSION_PREFIX") = std::string(core::debug_session_prefix);
  m.def(
      "displayed_state",
      [](const std::string& state, double busy_seconds, double stuck_after,
         const std::string& target) {
        return core::displayed_state(state, target, busy_seconds, stuck_after);
      },
      py::arg("state"), py::arg("busy_seconds"), py::arg("stuck_after"), py::arg("target") = "",
      "The state a person should read: 'debugging' for a worker in a post-mortem session, "
      "'stuck' for a worker busy that long, else `state`.");
  // A table from rows a pool reported (a cluster's), drawn as the engine
  // draws its own: one table for every pool.
  using status_row_tuple = std::tuple<std::int64_t, std::string, std::string, std::int64_t, double,
                                      std::uint64_t, std::string>;
  m.def(
      "render_status",
      [](const std::vector<status_row_tuple>& rows,
         const std::vector<std::pair<std::size_t, std::string>>& groups, const std::string& target,
         std::int64_t done, std::int64_t total, double elapsed_seconds, double stuck_after,
         bool table, const std::string& empty_text, const std::string& note) {
        core::status_view view;
        view.rows.reserve(rows.size());
        for (const auto& [index, state, call_target, item, busy, calls, detail] : rows) {
          view.rows.push_back({index, state, call_target, item, busy, calls, detail});
        }
        for (const auto& [first_row, title] : groups) view.groups.push_back({first_row, title});
        view.progress = {target, done, total, elapsed_seconds};
        view.table = table;
        view.empty_text = empty_text;
        view.note = note;
        const auto r = core::render_status(view, stuck_after);
        return py::make_tuple(r.html, r.text);
      },
      py::arg("rows"), py::kw_only(), py::arg("groups"), py::arg("target"), py::arg("done"),
      py::arg("total"), py::arg("elapsed_seconds"), py::arg("stuck_after"), py::arg("table"),
      py::arg("empty_text"), py::arg("note"),
      "The status table (HTML, text) of rows (index, state, target, item index or -1, busy "
      "seconds, calls done, detail), with group titles before rows, a progress line (total 0: "
      "none) and a note.");

  py::class_<map_counter>(m, "MapItemCounter")
      .def("update", &map_counter::update,
           "Reads what was logged since the last update; the items done so far.");

  py::class_<call_handle>(m, "CallHandle")
      .def("wait", &call_handle::wait, py::arg("timeout") = py::none(),
           "Wait (GIL released) until the call finished; False on timeout.")
      .def("claim", &call_handle::claim, "True for the one party that settles this call.")
      .def("take", &call_handle::take,
           "claim() and release(), then (status, reply_kind, reply, worker) of the finished call.")
      .def("release", &call_handle::release,
           "Release the future and buffers the call holds, if this handle won the claim; "
           "returns whether it did.")
      .def_property_readonly("id", [](const call_handle& h) { return h.get()->id; })
      .def_property_readonly("done", [](const call_handle& h) { return h.get()->done(); })
      .def_property_readonly("status", [](const call_handle& h) { return status_of(h.get()->outcome()); })
      .def_property_readonly("reply_kind", [](const call_handle& h) { return h.get()->reply_kind(); })
      .def_property_readonly("reply", [](const call_handle& h) { return reply_of(*h.get()); })
      .def_property_readonly("worker", [](const call_handle& h) { return h.get()->worker_index(); })
      .def_property_readonly("timing", [](const call_handle& h) { return timing_dict(h.get()->timing); });

  m.def(
      "open_engines",
      [] {
        {
          py::gil_scoped_release unlocked;
          registry().reap();
        }
        py::list out;
        for (auto& p : registry().snapshot()) out.append(py::cast(new engine(std::move(p)), py::return_value_policy::take_ownership));
        return out;
      },
      "Every engine whose threads have not all been joined yet, collected ones included: "
      "handles for the exit routine, whose loss never closes a pool.");
  m.def(
      "on_completion_thread", [] { return on_completion_thread(); },
      "Whether this is an engine's completion thread (done-callbacks must not run here).");

  py::class_<engine>(m, "Engine")
      .def(py::init<int, std::string, std::string, const py::bytes&>(), py::arg("workers"),
           py::arg("bootstrap_source"), py::arg("bootstrap_filename"), py::arg("setup_request"))
      .def("wait_ready", &engine::wait_ready, py::arg("timeout") = py::none())
      .def("submit", &engine::submit, py::arg("target"), py::arg("request"), py::arg("buffers"),
           py::arg("item_index") = -1, py::arg("item_count") = 1, py::arg("owner") = py::none(),
           py::arg("submitted_ns") = 0, py::arg("serialize_ns") = 0, py::arg("worker") = -1,
           "Queue a call for any worker, or for one worker (worker >= 0).")
      .def("submit_many", &engine::submit_many, py::arg("calls"),
           "Queue calls for any worker together, all or none: each is (target, request, "
           "buffers, item_index, item_count, submitted_ns, serialize_ns).")
      .def("call", &engine::call, py::arg("target"), py::arg("request"), py::arg("buffers"),
           py::arg("timeout") = py::none(), py::arg("submitted_ns") = 0,
           py::arg("serialize_ns") = 0)
      .def("cancel", &engine::cancel, "Remove a call from the queue if it has not started.")
      .def("close", &engine::close, py::arg("cancel_pending"), py::arg("timeout") = py::none())
      .def("status", &engine::status)
      .def("records", &engine::records, py::arg("after") = 0,
           "Finished-call records logged after position `after`, oldest first.")
      .def("totals", &engine::totals)
      .def("inject_fault", &engine::inject_fault, py::arg("index"), py::arg("kind"))
      .def("interrupt", &engine::interrupt, py::arg("indices"), py::arg("timeout") = py::none(),
           "Raise SystemExit in the calls these workers run (used at interpreter exit).")
      .def("render_live", &engine::render_live, py::arg("target"), py::arg("total"),
           py::arg("items_at_start"), py::arg("started_ns"),
           py::arg("stuck_after") = core::default_stuck_after_seconds, py::arg("note") = "",
           "(html, text) of the live status display; progress counts items finished since "
           "items_at_start; `note` is a line under the table.")
      .def("map_item_counter", &engine::map_item_counter, py::arg("after_seq"),
           py::arg("first_call_id"),
           "Counts the items of one map done: of replied chunks logged after after_seq "
           "whose call id is first_call_id or later.")
      .def("live_feed", &engine::live_feed,
           "A PyCapsule 'interp_rpc.live_feed' for C++ readers of the status board.")
      .def_property_readonly("workers", [](engine& e) { return e.pool().workers(); })
      .def_property_readonly("alive", [](engine& e) { return e.pool().alive(); })
      .def_property_readonly("broken", [](engine& e) { return e.pool().broken(); })
      .def_property_readonly("closing", [](engine& e) { return e.pool().closing(); })
      .def_property_readonly("queued", [](engine& e) { return e.pool().queued(); })
      .def_property_readonly("last_call_id", &engine::last_call_id,
                             "The id of the most recently submitted call (0: none yet).")
      .def_property_readonly("interpreter_ids", [](engine& e) { return e.pool().interpreter_ids(); });
}
