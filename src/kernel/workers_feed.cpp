#include "kernel/workers_feed.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <set>
#include <utility>

#include <pybind11_json/pybind11_json.hpp>

#include "core/clock.hpp"
#include "core/thread_start.hpp"
#include "kernel/interpreter.hpp"

namespace py = pybind11;
namespace nl = nlohmann;

namespace interp_rpc::kernel {

namespace {

// Every feed that exists; a feed lives as long as its Python object.
std::mutex g_feeds_mutex;
std::set<workers_feed*> g_feeds;  // guarded by g_feeds_mutex

// The states a total is always given for (workers_status.STATES).
constexpr const char* always_counted[] = {"idle", "busy", "stuck", "dead", "debugging"};

// Whether workers in this state are at work: the panel is then refreshed often.
bool at_work(const std::string& state) {
  return state == "busy" || state == "stuck" || state == "debugging" || state == "starting";
}

double milliseconds_rounded(double seconds) { return std::round(seconds * 1000.0) / 1000.0; }

nl::json or_null(const std::string& text) { return text.empty() ? nl::json() : nl::json(text); }

// The same version as workers_status.PROTOCOL_VERSION.
constexpr int protocol_version = 1;

}  // namespace

workers_feed::workers_feed(core::live_feed feed, workers_feed_options options,
                           interpreter& owner)
    : m_feed(std::move(feed)), m_options(std::move(options)), m_owner(owner) {
  m_thread = core::start_thread("the Workers panel's publisher thread", &workers_feed::run, this);
  std::lock_guard lock(g_feeds_mutex);
  g_feeds.insert(this);
}

workers_feed::~workers_feed() {
  {
    std::lock_guard lock(g_feeds_mutex);
    g_feeds.erase(this);
  }
  stop();
}

void stop_workers_feeds() {
  std::set<workers_feed*> feeds;
  {
    std::lock_guard lock(g_feeds_mutex);
    feeds = g_feeds;
  }
  for (workers_feed* feed : feeds) {
    feed->stop();
  }
}

void workers_feed::set_map(workers_feed_map map) {
  {
    std::lock_guard lock(m_mutex);
    m_map = std::move(map);
    ++m_generation;
    m_changed = true;
  }
  m_wake.notify_all();
}

std::uint64_t workers_feed::stop() {
  {
    std::lock_guard lock(m_mutex);
    m_stop = true;
  }
  m_wake.notify_all();
  if (m_thread.joinable()) m_thread.join();
  std::lock_guard lock(m_mutex);
  return m_sent;
}

nl::json workers_feed::message() {
  workers_feed_map map;
  std::uint64_t generation = 0;
  {
    std::lock_guard lock(m_mutex);
    map = m_map;
    generation = m_generation;
  }
  const double stuck_after =
      map.pool.value("stuck_after", static_cast<double>(core::default_stuck_after_seconds));
  nl::json totals = nl::json::object();
  for (const char* state : always_counted) totals[state] = 0;
  nl::json rows = nl::json::array();
  for (const core::worker_snapshot& w : m_feed.board->snapshot()) {
    const std::string state = core::displayed_state(w, stuck_after);
    totals[state] = totals.value(state, 0) + 1;
    rows.push_back({{"index", w.index},
                    {"state", state},
                    {"target", or_null(w.target)},
                    {"item", w.item_index < 0 ? nl::json() : nl::json(w.item_index)},
                    {"seconds", milliseconds_rounded(w.busy_seconds)},
                    {"calls_done", w.calls_done},
                    {"detail", or_null(w.detail)}});
  }
  nl::json progress;  // null: no map runs
  if (!map.target.empty()) {
    if (!m_done || m_counted_generation != generation) {
      m_done.emplace(map.after_seq, map.first_call_id);
      m_counted_generation = generation;
    }
    const std::int64_t done = std::min(m_done->update(*m_feed.log), map.total);
    progress = {{"target", map.target},
                {"done", done},
                {"total", map.total},
                {"seconds", milliseconds_rounded(
                                static_cast<double>(core::now_ns() - map.started_ns) * 1e-9)}};
  }
  return {{"type", "status"},
          {"version", protocol_version},
          {"pool", map.pool},
          {"totals", totals},
          {"groups", nl::json::array({{{"process", nullptr}, {"workers", rows}}})},
          {"map", progress}};
}

void workers_feed::run() {
  // The board is read every refresh (it costs no GIL and no lock of the
  // engine's), so a worker that turns busy shows within one; a message goes
  // out when workers are at work, when anything changed, when the map
  // changed, and as a heartbeat otherwise.
  const auto refresh = std::chrono::duration<double>(m_options.busy_refresh_seconds);
  const auto heartbeat = std::chrono::duration<double>(m_options.idle_heartbeat_seconds);
  nl::json last;
  std::optional<std::chrono::steady_clock::time_point> last_sent;
  std::unique_lock lock(m_mutex);
  // Nothing goes out before the Python side has said which pool this is
  // (the first set_map): a status then had an empty "pool".
  m_wake.wait(lock, [this] { return m_stop || m_generation > 0; });
  while (!m_stop) {
    const bool map_changed = std::exchange(m_changed, false);
    lock.unlock();
    const nl::json data = message();
    bool working = !data["map"].is_null();
    for (const auto& [state, count] : data["totals"].items()) {
      working = working || (at_work(state) && count.get<int>() > 0);
    }
    const auto now = std::chrono::steady_clock::now();
    const bool due = !last_sent || map_changed || working || data != last ||
                     now - *last_sent >= heartbeat;
    if (due) {
      try {
        m_owner.publish_iopub("comm_msg", m_options.parent_header, nl::json::object(),
                              {{"comm_id", m_options.comm_id}, {"data", data}}, {});
      } catch (const std::exception&) {
        return;  // the kernel is stopping: there is no IOPub any more
      }
      last = data;
      last_sent = now;
    }
    lock.lock();
    if (due) ++m_sent;
    m_wake.wait_for(lock, refresh, [this] { return m_stop || m_changed; });
  }
}

void bind_workers_feed(py::module_& m) {
  py::class_<workers_feed>(m, "WorkersFeed")
      .def("stop", &workers_feed::stop, py::call_guard<py::gil_scoped_release>(),
           "Stop sending; returns how many status messages were sent.")
      .def(
          "set_map",
          [](workers_feed& self, const py::dict& pool, std::string target, std::int64_t total,
             std::uint64_t after_seq, std::uint64_t first_call_id, std::int64_t started_ns) {
            workers_feed_map map{pyjson::to_json(pool), std::move(target), total, after_seq,
                                 first_call_id, started_ns};
            self.set_map(std::move(map));
          },
          py::arg("pool"), py::arg("target"), py::arg("total"), py::arg("after_seq"),
          py::arg("first_call_id"), py::arg("started_ns"),
          "The pool's description and the running map (target '' for none), sent at once.");
  m.def(
      "start_workers_feed",
      [](const py::capsule& feed, std::string comm_id, const py::dict& parent_header,
         double busy_refresh, double idle_heartbeat) {
        auto* source = static_cast<core::live_feed*>(
            PyCapsule_GetPointer(feed.ptr(), core::live_feed_capsule_name));
        if (source == nullptr) throw py::error_already_set();
        if (!(busy_refresh > 0) || !(idle_heartbeat > 0)) {
          throw py::value_error("the refresh and heartbeat must be positive seconds");
        }
        workers_feed_options options{std::move(comm_id), pyjson::to_json(parent_header),
                                     busy_refresh, idle_heartbeat};
        auto& owner = static_cast<interpreter&>(xeus::get_interpreter());
        return std::make_unique<workers_feed>(*source, std::move(options), owner);
      },
      py::arg("feed"), py::arg("comm_id"), py::arg("parent_header"), py::arg("busy_refresh"),
      py::arg("idle_heartbeat"),
      "Send the pool's status on the Workers panel's comm from a C++ thread, with no GIL.");
}

}  // namespace interp_rpc::kernel
