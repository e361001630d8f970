#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "core/call.hpp"

using namespace interp_rpc::core;

TEST_CASE("a call completes once and wakes its waiter") {
  auto c = std::make_shared<call>(7, "mod.fn", "req", std::vector<buffer_view>{}, -1, 1);
  CHECK_FALSE(c->done());
  CHECK_FALSE(c->wait_for(1'000'000));  // 1 ms: nobody completes it
  std::thread worker([c] { CHECK(c->complete(call_outcome::replied, 3, "reply", 1)); });
  CHECK(c->wait_for(-1));
  worker.join();
  CHECK(c->outcome() == call_outcome::replied);
  CHECK(c->reply_kind() == 3);
  CHECK(c->reply() == "reply");
  CHECK(c->worker_index() == 1);
  CHECK_FALSE(c->complete(call_outcome::cancelled, 0, "late", -1));
  CHECK(c->reply() == "reply");
}

TEST_CASE("exactly one party claims a call") {
  call c(1, "t", "", {}, -1, 1);
  CHECK(c.try_claim());
  CHECK_FALSE(c.try_claim());
  CHECK(c.claimed());
}

TEST_CASE("a finished call is settled exactly once: by its direct waiter or the completion thread") {
  // Each round, a caller stops waiting on a call just as a worker finishes it
  // and the completion thread looks at it (here one thread plays both, as the
  // completion queue's lock orders them). Both sides start a round at the
  // same moment, spinning, so that their operations overlap. Exactly one of
  // them must settle each call.
  constexpr int rounds = 20'000;
  std::vector<call_ptr> calls;
  calls.reserve(rounds);
  for (int r = 0; r < rounds; ++r) {
    calls.push_back(std::make_shared<call>(static_cast<std::uint64_t>(r), "t", "",
                                           std::vector<buffer_view>{}, -1, 1));
  }
  std::vector<int> settled(rounds, 0);  // each round's entry written by its winner only
  std::atomic<int> started{-1};
  std::atomic<int> finished{-1};
  const auto wait_for = [](const std::atomic<int>& counter, int r) {
    for (int spins = 0; counter.load(std::memory_order_acquire) < r; ++spins) {
      if (spins > 1000) std::this_thread::yield();
    }
  };
  std::thread finisher([&] {
    for (int r = 0; r < rounds; ++r) {
      wait_for(started, r);
      call& c = *calls[static_cast<std::size_t>(r)];
      c.complete(call_outcome::replied, 0, "", 0);
      if (c.left_to_completion_thread() && c.try_claim()) settled[static_cast<std::size_t>(r)] += 1;
      finished.store(r, std::memory_order_release);
    }
  });
  for (int r = 0; r < rounds; ++r) {
    call& c = *calls[static_cast<std::size_t>(r)];
    c.begin_direct_wait();
    started.store(r, std::memory_order_release);
    if (c.end_direct_wait() && c.try_claim()) settled[static_cast<std::size_t>(r)] += 1;
    wait_for(finished, r);
  }
  finisher.join();
  CHECK(std::count(settled.begin(), settled.end(), 0) == 0);
  CHECK(std::count(settled.begin(), settled.end(), 1) == rounds);
}

TEST_CASE("call outcomes have names") {
  CHECK(std::string(to_string(call_outcome::worker_died)) == "worker_died");
  CHECK(std::string(to_string(call_outcome::pool_broken)) == "pool_broken");
}
