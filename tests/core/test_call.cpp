#include <doctest/doctest.h>

#include <thread>

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

TEST_CASE("call outcomes have names") {
  CHECK(std::string(to_string(call_outcome::worker_died)) == "worker_died");
  CHECK(std::string(to_string(call_outcome::pool_broken)) == "pool_broken");
}
