// The Workers panel's status, sent by the kernel from a C++ thread.
//
// JupyterLab's Workers panel opens a comm (target interp-rpc.workers); the
// Python side (interp_rpc/notebook/workers_panel.py) answers and, for a pool
// of this process, hands the comm's updates to this thread. Like the live
// view (live_view.hpp), it reads the engine's status board and call log
// without any GIL, so the panel keeps updating while a cell holds the GIL or
// blocks the main shell. It writes the message shape of
// interp_rpc/notebook/workers_status.py (docs/workers-panel.md): every
// busy_refresh_seconds while a map runs or a worker is busy, or anything
// changed, every idle_heartbeat_seconds otherwise, and at once when the map
// changes.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>

#include "core/live_feed.hpp"
#include "core/live_view.hpp"

namespace interp_rpc::kernel {

class interpreter;

struct workers_feed_options {
  std::string comm_id;
  nlohmann::json parent_header;  // the comm_open request's
  double busy_refresh_seconds = 0.25;
  double idle_heartbeat_seconds = 5.0;
};

// What the Python side knows: the pool's description (the "pool" object of
// a status message, with its "stuck_after"), and the map running, if any.
struct workers_feed_map {
  nlohmann::json pool = nlohmann::json::object();
  std::string target;  // empty: no map runs
  std::int64_t total = 0;
  std::uint64_t after_seq = 0;      // the call log's position when the map started
  std::uint64_t first_call_id = 0;  // the map's first call
  std::int64_t started_ns = 0;
};

class workers_feed {
 public:
  workers_feed(core::live_feed feed, workers_feed_options options, interpreter& owner);
  workers_feed(const workers_feed&) = delete;
  workers_feed& operator=(const workers_feed&) = delete;
  ~workers_feed();

  // Any thread: the pool's description and map from now on; sent at once.
  void set_map(workers_feed_map map);

  // Stops sending (idempotent); returns how many messages were sent.
  std::uint64_t stop();

 private:
  void run();
  // The status message as it would be sent now (the publishing thread's:
  // it advances the map's item counter).
  nlohmann::json message();

  const core::live_feed m_feed;
  const workers_feed_options m_options;
  interpreter& m_owner;
  std::mutex m_mutex;
  std::condition_variable m_wake;
  bool m_stop = false;          // guarded by m_mutex
  bool m_changed = false;       // guarded by m_mutex
  workers_feed_map m_map;       // guarded by m_mutex
  std::uint64_t m_generation = 0;  // guarded by m_mutex: bumped by set_map
  std::uint64_t m_sent = 0;     // guarded by m_mutex
  // The publishing thread's own: the map's item counter, for m_counted_generation.
  std::optional<core::map_item_counter> m_done;
  std::uint64_t m_counted_generation = 0;
  std::thread m_thread;
};

// Stops every feed still running, before the interpreter they publish
// through is torn down. Main thread, with the GIL.
void stop_workers_feeds();

// Adds start_workers_feed() to the kernel's Python module.
void bind_workers_feed(pybind11::module_& m);

}  // namespace interp_rpc::kernel
