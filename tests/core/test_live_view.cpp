#include <doctest/doctest.h>

#include "core/call.hpp"
#include "core/call_log.hpp"
#include "core/live_view.hpp"

using namespace interp_rpc::core;

namespace {
worker_snapshot worker(int index, worker_state state, double busy, std::string target = "",
                       std::int64_t item = -1) {
  worker_snapshot w;
  w.index = index;
  w.state = state;
  w.busy_seconds = busy;
  w.target = std::move(target);
  w.item_index = item;
  return w;
}
}  // namespace

TEST_CASE("a worker busy past the threshold shows as stuck") {
  CHECK(displayed_state(worker(0, worker_state::busy, 9.9, "t"), 10.0) == "busy");
  CHECK(displayed_state(worker(0, worker_state::busy, 10.0, "t"), 10.0) == "stuck");
  CHECK(displayed_state(worker(0, worker_state::idle, 99.0), 10.0) == "idle");
}

TEST_CASE("a worker in a post-mortem session shows as debugging, never stuck") {
  const std::string session = std::string(debug_session_prefix) + "crunch";
  CHECK(displayed_state(worker(0, worker_state::busy, 999.0, session), 10.0) == "debugging");
  CHECK(displayed_state(worker(0, worker_state::busy, 1.0, session), 10.0) == "debugging");
  // A real target's name never has the prefix's space: it is only busy, then stuck.
  CHECK(displayed_state(worker(0, worker_state::busy, 1.0, "post_mortem.of"), 10.0) == "busy");
  const auto rows = render_live_view({worker(0, worker_state::busy, 3.0, session)}, {}, 10.0);
  CHECK(rows.text.find("debugging") != std::string::npos);
  CHECK(rows.html.find("interp-rpc-debugging") != std::string::npos);
}

TEST_CASE("the live view shows progress and every worker, escaping HTML") {
  auto dead = worker(2, worker_state::dead, 0);
  dead.detail = "its thread failed";
  const std::vector<worker_snapshot> workers = {
      worker(0, worker_state::busy, 1.5, "mod.<f>", 41), worker(1, worker_state::busy, 12.0, "mod.g", 7),
      dead, worker(3, worker_state::idle, 0)};
  const live_progress progress{"mod.f", 25, 100, 3.0};
  const auto r = render_live_view(workers, progress, 10.0);
  CHECK(r.html.find("25/100 items (25%)") != std::string::npos);
  CHECK(r.html.find("mod.&lt;f&gt;") != std::string::npos);
  CHECK(r.html.find("<f>") == std::string::npos);
  CHECK(r.html.find("interp-rpc-stuck") != std::string::npos);
  CHECK(r.html.find("its thread failed") != std::string::npos);
  CHECK(r.text.find("[#######.......................] 25/100") != std::string::npos);
  CHECK(r.text.find("stuck") != std::string::npos);
  CHECK(r.text.find("41") != std::string::npos);
}

TEST_CASE("without a map there is no progress bar") {
  const auto r = render_live_view({worker(0, worker_state::idle, 0)}, live_progress{}, 10.0);
  CHECK(r.html.find("interp-rpc-progress") == std::string::npos);
  CHECK(r.text.rfind("worker", 0) == 0);
}

TEST_CASE("a note goes under the table, escaped in the HTML") {
  const auto r = render_live_view({worker(0, worker_state::idle, 0)}, live_progress{}, 10.0,
                                  "Not updated <any> more");
  const auto table_end = r.text.find("idle");
  CHECK(r.text.find("Not updated <any> more\n") > table_end);
  CHECK(r.html.find("Not updated &lt;any&gt; more") != std::string::npos);
  CHECK(render_live_view({}, live_progress{}, 10.0).text.find("Not updated") == std::string::npos);
}

TEST_CASE("progress shows the rate and, while items remain, the ETA") {
  const live_progress halfway{"f", 10, 20, 2.0};
  const auto r = render_live_view({}, halfway, 10.0);
  CHECK(r.text.find("10/20 items (50%), 2.00 s, 5.00 items/s, ETA 2.00 s") != std::string::npos);
  CHECK(r.html.find("5.00 items/s, ETA 2.00 s") != std::string::npos);
  const live_progress finished{"f", 20, 20, 4.0};
  CHECK(render_live_view({}, finished, 10.0).text.find("ETA") == std::string::npos);
  const live_progress nothing_yet{"f", 0, 20, 1.0};
  CHECK(render_live_view({}, nothing_yet, 10.0).text.find("items/s") == std::string::npos);
}

TEST_CASE("a map's item counter counts its own replied chunks only") {
  call_log log(100);
  auto logged = [&](std::uint64_t id, std::int64_t item, std::int64_t count,
                    call_outcome outcome) {
    call c(id, "t", "", std::vector<buffer_view>{}, item, count);
    log.add(c, outcome, 0, 0);
  };
  logged(1, 0, 5, call_outcome::replied);  // before the map
  const auto after_seq = log.records_after(0).back().seq;
  map_item_counter counter(after_seq, 3);
  logged(2, 0, 4, call_outcome::replied);  // an earlier map's chunk, finishing late
  logged(3, 0, 2, call_outcome::replied);  // the map's
  logged(4, -1, 1, call_outcome::replied);  // a plain call
  logged(5, 2, 3, call_outcome::cancelled);
  CHECK(counter.update(log) == 2);
  logged(6, 5, 3, call_outcome::replied);
  CHECK(counter.update(log) == 5);
  CHECK(counter.update(log) == 5);  // each record counts once
}
