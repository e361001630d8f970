#include <doctest/doctest.h>

#include "core/clock.hpp"
#include "core/status_board.hpp"

using namespace interp_rpc::core;

TEST_CASE("status_board tracks each worker's current call and totals") {
  status_board board(2);
  board.set_state(0, worker_state::idle);
  board.set_state(1, worker_state::idle);
  const auto started = now_ns();
  board.begin_call(1, 42, "mymodule.process", 17, started);
  auto snap = board.snapshot();
  REQUIRE(snap.size() == 2);
  CHECK(snap[0].state == worker_state::idle);
  CHECK(snap[0].target.empty());
  CHECK(snap[1].state == worker_state::busy);
  CHECK(snap[1].call_id == 42);
  CHECK(snap[1].target == "mymodule.process");
  CHECK(snap[1].item_index == 17);
  CHECK(snap[1].busy_seconds >= 0);

  board.end_call(1, started + 2'000'000'000);  // it ran 2 s
  snap = board.snapshot();
  CHECK(snap[1].state == worker_state::idle);
  CHECK(snap[1].calls_done == 1);
  CHECK(snap[1].busy_seconds_total == doctest::Approx(2.0));
  CHECK(snap[1].call_id == 0);
  CHECK(snap[1].target.empty());
}

TEST_CASE("status_board records why a worker died") {
  status_board board(1);
  board.mark_dead(0, "its thread failed");
  const auto snap = board.snapshot();
  CHECK(snap[0].state == worker_state::dead);
  CHECK(snap[0].detail == "its thread failed");
  CHECK(std::string(to_string(snap[0].state)) == "dead");
}
