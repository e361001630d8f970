#include <doctest/doctest.h>

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
