#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kernel/subshells.hpp"

namespace {

using interp_rpc::kernel::subshells;
using namespace std::chrono_literals;

xeus::xmessage request(const std::string& msg_id) {
  return xeus::xmessage({}, {{"msg_id", msg_id}}, nl::json::object(), nl::json::object(),
                        nl::json::object(), xeus::buffer_sequence());
}

std::string msg_id(const xeus::xmessage& message) {
  return message.header().value("msg_id", "");
}

// A handler that blocks until released, and records what it ran.
struct gate {
  std::mutex mutex;
  std::condition_variable changed;
  bool open = false;
  std::vector<std::string> ran;
  std::vector<std::thread::id> threads;
  std::vector<std::string> subshell_ids;

  void handle(xeus::xmessage message) {
    std::unique_lock lock(mutex);
    ran.push_back(msg_id(message));
    threads.push_back(std::this_thread::get_id());
    subshell_ids.push_back(subshells::current().value_or("none"));
    changed.notify_all();
    changed.wait(lock, [this] { return open; });
  }
  void release() {
    {
      std::lock_guard lock(mutex);
      open = true;
    }
    changed.notify_all();
  }
  bool wait_for_runs(std::size_t count) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, 10s, [&] { return ran.size() >= count; });
  }
};

}  // namespace

TEST_CASE("subshells are created, listed oldest first, and deleted") {
  subshells shells;
  shells.set_handler([](xeus::xmessage) {});
  const std::string first = shells.create();
  const std::string second = shells.create();
  CHECK(first != second);
  CHECK(first.size() == 36);  // a UUID's text form
  CHECK(shells.list() == std::vector<std::string>{first, second});
  CHECK(shells.remove(first));
  CHECK_FALSE(shells.remove(first));
  CHECK_FALSE(shells.remove("no-such-id"));
  CHECK(shells.list() == std::vector<std::string>{second});
  CHECK(shells.stop(1s));
  CHECK_FALSE(shells.threads_left());
}

TEST_CASE("a subshell runs its requests in order, on its own thread") {
  gate g;
  g.release();
  subshells shells;
  shells.set_handler([&g](xeus::xmessage m) { g.handle(std::move(m)); });
  const std::string id = shells.create();
  for (const char* name : {"a", "b", "c"}) {
    xeus::xmessage m = request(name);
    CHECK(shells.deliver(id, m));
  }
  REQUIRE(g.wait_for_runs(3));
  std::lock_guard lock(g.mutex);
  CHECK(g.ran == std::vector<std::string>{"a", "b", "c"});
  CHECK(g.threads[0] != std::this_thread::get_id());
  CHECK(g.threads[0] == g.threads[2]);
  CHECK(g.subshell_ids[0] == id);
  CHECK_FALSE(subshells::current().has_value());
}

TEST_CASE("a request for an unknown subshell is left to the caller") {
  subshells shells;
  shells.set_handler([](xeus::xmessage) {});
  xeus::xmessage m = request("orphan");
  CHECK_FALSE(shells.deliver("no-such-id", m));
  CHECK(msg_id(m) == "orphan");
}

TEST_CASE("deleting a subshell waits for its running request; the queued ones are dropped") {
  gate g;
  subshells shells;
  shells.set_handler([&g](xeus::xmessage m) { g.handle(std::move(m)); });
  const std::string id = shells.create();
  xeus::xmessage running = request("running");
  xeus::xmessage queued = request("queued");
  shells.deliver(id, running);
  REQUIRE(g.wait_for_runs(1));
  shells.deliver(id, queued);
  std::atomic<bool> removed{false};
  std::thread remover([&] { removed = shells.remove(id); });
  std::this_thread::sleep_for(100ms);
  CHECK_FALSE(removed.load());
  g.release();
  remover.join();
  CHECK(removed.load());
  std::lock_guard lock(g.mutex);
  CHECK(g.ran == std::vector<std::string>{"running"});
}

TEST_CASE("the requests queued on a subshell are taken on its own thread") {
  subshells shells;
  std::vector<std::string> taken;
  std::mutex mutex;
  std::condition_variable done;
  bool finished = false;
  shells.set_handler([&](xeus::xmessage m) {
    if (msg_id(m) != "first") {
      return;
    }
    // Both others are queued by now (see below).
    std::this_thread::sleep_for(200ms);
    shells.take_queued([&](xeus::xmessage each) { taken.push_back(msg_id(each)); });
    std::lock_guard lock(mutex);
    finished = true;
    done.notify_all();
  });
  const std::string id = shells.create();
  for (const char* name : {"first", "second", "third"}) {
    xeus::xmessage m = request(name);
    shells.deliver(id, m);
  }
  std::unique_lock lock(mutex);
  REQUIRE(done.wait_for(lock, 10s, [&] { return finished; }));
  CHECK(taken == std::vector<std::string>{"second", "third"});
}

TEST_CASE("stop gives up on a request that does not end, and says so") {
  // Shared with the thread, which outlives this test.
  auto g = std::make_shared<gate>();
  auto shells = std::make_unique<subshells>();
  shells->set_handler([g](xeus::xmessage m) { g->handle(std::move(m)); });
  const std::string id = shells->create();
  xeus::xmessage m = request("endless");
  shells->deliver(id, m);
  REQUIRE(g->wait_for_runs(1));
  const auto started = std::chrono::steady_clock::now();
  CHECK_FALSE(shells->stop(200ms));
  CHECK(std::chrono::steady_clock::now() - started < 5s);
  CHECK(shells->threads_left());
  CHECK_THROWS(shells->create());
  // The thread outlives the manager, detached, and ends once released.
  shells.reset();
  g->release();
}
