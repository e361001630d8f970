// The pool's live status view, published by the kernel from a C++ thread.
//
// While a cell blocks in %parallel_map, the notebook's main thread (and its
// GIL) is busy; this thread reads the engine's status board and call log
// (both lock-free for readers, no GIL) and publishes update_display_data a few
// times a second, parented to the cell that started it. The rendering is the
// engine's own (core/live_view.hpp), the same one ipykernel users get from a
// Python thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <pybind11/pybind11.h>
#include <xeus/xrequest_context.hpp>

#include "core/live_feed.hpp"
#include "core/live_view.hpp"

namespace interp_rpc::kernel {

struct live_view_options {
  std::string display_id;
  std::string target;
  std::int64_t total = 0;
  std::uint64_t after_seq = 0;      // the call log's position when the map started
  std::uint64_t first_call_id = 0;  // the map's first call (see core::map_item_counter)
  std::int64_t started_ns = 0;
  double stuck_after_seconds = core::default_stuck_after_seconds;
  double refresh_seconds = 0.25;
  std::optional<double> duration_seconds;  // none: until stop()
  std::string ended_note;  // under the last table, published when the duration ends
};

class live_view {
 public:
  live_view(core::live_feed feed, live_view_options options, xeus::xrequest_context parent);
  live_view(const live_view&) = delete;
  live_view& operator=(const live_view&) = delete;
  ~live_view();

  // Stops publishing (idempotent); returns how many updates were published.
  std::uint64_t stop();

  // Whether the view ended on its own, its duration over, and published
  // its last table with the ended note.
  bool ended();

 private:
  void run(xeus::xrequest_context parent);
  void publish(std::string note = {});

  const core::live_feed m_feed;
  const live_view_options m_options;
  core::map_item_counter m_done;  // only the publishing thread uses it
  std::mutex m_mutex;
  std::condition_variable m_wake;
  bool m_stop = false;
  bool m_ended = false;
  std::uint64_t m_updates = 0;
  std::thread m_thread;
};

// Stops every view still running, before the interpreter they publish through
// is torn down. Main thread, with the GIL (so that Python cannot destroy a
// view meanwhile).
void stop_live_views();

// Adds start_live_view() to the kernel's Python module.
void bind_live_view(pybind11::module_& m);

}  // namespace interp_rpc::kernel
