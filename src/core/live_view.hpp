// The live status display of a pool: what every worker is doing and how far
// a map has got, rendered as text/html and text/plain.
//
// It is rendered from a status snapshot alone, without any GIL, so the kernel
// can publish it from a C++ thread while the notebook's main thread is
// blocked in a call; under other kernels a Python thread publishes the same
// rendering through interp_rpc._core. A cluster's table (rows that its
// processes reported, grouped by process) is rendered here too
// (render_status): one table, one set of rules, for every pool.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/call_log.hpp"
#include "core/status_board.hpp"

namespace interp_rpc::core {

struct live_progress {
  std::string target;          // what the map runs; empty when not a map
  std::int64_t done = 0;       // items finished
  std::int64_t total = 0;      // items in the map (0: no progress bar)
  double elapsed_seconds = 0;
};

struct live_rendering {
  std::string html;
  std::string text;
};

// A busy worker counts as stuck once its call has run this long.
inline constexpr double default_stuck_after_seconds = 10.0;

// Counts the items of one map that are done, from the call log: the items of
// replied map chunks logged after `after_seq` whose call id is at least
// `first_call_id` (the map's first call), so that calls that finished before
// the map, or an earlier map's chunks still running, never count for it. The
// rule the notebook's LiveView counts by (InterpreterPool.map_item_counter).
class map_item_counter {
 public:
  map_item_counter(std::uint64_t after_seq, std::uint64_t first_call_id)
      : m_last_seq(after_seq), m_first_call_id(first_call_id) {}

  // Reads what was logged since the last call; returns the items done so far.
  std::int64_t update(const call_log& log);

 private:
  std::uint64_t m_last_seq;
  const std::uint64_t m_first_call_id;
  std::int64_t m_done = 0;
};

// One worker's row, as any pool reports it (a cluster's rows come from its
// processes' answers, not from a status board).
struct status_row {
  std::int64_t index = 0;
  std::string state;               // "idle", "busy", "dead", ...
  std::string target;              // current call's target, empty when none
  std::int64_t item_index = -1;    // current map item (first of the chunk), or -1
  double busy_seconds = 0;
  std::uint64_t calls_done = 0;
  std::string detail;              // why a dead worker died
};

// A titled group of rows, from row `first_row` on: one process of a cluster.
struct row_group {
  std::size_t first_row = 0;
  std::string title;
};

struct status_view {
  std::vector<status_row> rows;
  std::vector<row_group> groups;  // by first_row, ascending; empty: no titles
  live_progress progress;         // total 0: no progress line
  bool table = true;              // false: the progress line and note alone
  std::string empty_text;         // the table's one row when it has none
  std::string note;               // a line under the table
};

live_rendering render_status(const status_view& view, double stuck_after_seconds);

// render_status of a status board's snapshot, with `note` under the table.
live_rendering render_live_view(const std::vector<worker_snapshot>& workers,
                                const live_progress& progress, double stuck_after_seconds,
                                std::string note = {});

// The name of every post-mortem debugging session's call begins with this
// (interp_rpc._pool.post_mortem names them): a worker busy with one is
// "debugging", waiting on a person, never "stuck". No real target's name
// has a space in it, so none can be taken for one.
inline constexpr std::string_view debug_session_prefix = "post-mortem of ";

// "idle", "busy", "debugging", "stuck", "dead"...: the state a person should read.
std::string displayed_state(const worker_snapshot& w, double stuck_after_seconds);

// The same for a worker reported as `state` ("busy", ...) running `target`
// for `busy_seconds`: a busy worker whose call has run stuck_after_seconds or
// longer is "stuck", one running a debugging session is "debugging". This is
// the one definition of both, for the local pool's table and a cluster's
// (interp_rpc.records.WorkerStatus).
std::string displayed_state(std::string_view state, std::string_view target, double busy_seconds,
                            double stuck_after_seconds);

// The colour that marks the state cell of a row in a displayed state: a CSS
// value, "transparent" for none (see live_view.cpp for why not the word).
std::string_view state_marker(std::string_view displayed_state);

// How the status tables write a duration: "2.50 s", "12.5 s".
std::string seconds_text(double s);

}  // namespace interp_rpc::core
