#include <doctest/doctest.h>

#include <future>
#include <string>
#include <thread>

#include "kernel/output_parent.hpp"

namespace {

xeus::xrequest_context request(const std::string& msg_id) {
  return xeus::xrequest_context({{"msg_id", msg_id}}, {});
}

std::string msg_id(const xeus::xrequest_context& context) {
  return context.header().value("msg_id", "");
}

std::string seen_from_another_thread(const interp_rpc::kernel::output_parent& parent) {
  std::string seen;
  std::thread([&] { seen = msg_id(parent.current()); }).join();
  return seen;
}

}  // namespace

TEST_CASE("every thread's output goes to the current execute request") {
  interp_rpc::kernel::output_parent parent;
  parent.set_execute_request(request("cell-1"));
  CHECK(parent.on_main_thread());
  CHECK(msg_id(parent.current()) == "cell-1");
  CHECK(seen_from_another_thread(parent) == "cell-1");

  parent.set_execute_request(request("cell-2"));
  CHECK(msg_id(parent.current()) == "cell-2");
  CHECK(seen_from_another_thread(parent) == "cell-2");
}

TEST_CASE("a comm message takes the main thread's output, not the other threads'") {
  interp_rpc::kernel::output_parent parent;
  parent.set_execute_request(request("cell"));

  xeus::xrequest_context previous = parent.exchange_main(request("comm-msg"));
  CHECK(msg_id(previous) == "cell");
  CHECK(msg_id(parent.current()) == "comm-msg");
  CHECK(seen_from_another_thread(parent) == "cell");

  parent.exchange_main(std::move(previous));
  CHECK(msg_id(parent.current()) == "cell");
}

TEST_CASE("a thread keeps its copy while the main thread moves on") {
  interp_rpc::kernel::output_parent parent;
  parent.set_execute_request(request("cell-1"));
  std::promise<void> copied;
  std::promise<void> moved_on;
  std::string first;
  std::string second;
  std::thread other([&] {
    const xeus::xrequest_context& mine = parent.current();
    first = msg_id(mine);
    copied.set_value();
    moved_on.get_future().wait();
    second = msg_id(mine);
  });
  copied.get_future().wait();
  parent.set_execute_request(request("cell-2"));
  moved_on.set_value();
  other.join();
  CHECK(first == "cell-1");
  CHECK(second == "cell-1");
}
