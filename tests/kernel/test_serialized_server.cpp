#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kernel/serialized_server.hpp"

namespace {

class null_messenger final : public xeus::xcontrol_messenger {
  nl::json send_to_shell_impl(const nl::json&) override { return nl::json::object(); }
};

// Stands for a zmq server: records how many publishers are inside publish()
// at once, and lets the test deliver incoming messages.
class recording_server final : public xeus::xserver {
 public:
  std::atomic<int> inside{0};
  std::atomic<int> most_inside{0};
  std::atomic<int> published{0};

  void deliver_shell(xeus::xmessage msg) { notify_shell_listener(std::move(msg)); }
  void deliver_control(xeus::xmessage msg) { notify_control_listener(std::move(msg)); }

 private:
  xeus::xcontrol_messenger& get_control_messenger_impl() override { return m_messenger; }
  void send_shell_impl(xeus::xmessage) override {}
  void send_control_impl(xeus::xmessage) override {}
  void send_stdin_impl(xeus::xmessage) override {}
  void publish_impl(xeus::xpub_message, xeus::channel) override {
    const int now = ++inside;
    int most = most_inside.load();
    while (now > most && !most_inside.compare_exchange_weak(most, now)) {
    }
    // Long enough for unserialized publishers to overlap.
    std::this_thread::sleep_for(std::chrono::microseconds(20));
    --inside;
    ++published;
  }
  void start_impl(xeus::xpub_message) override {}
  void abort_queue_impl(const listener&, long) override {}
  void stop_impl() override {}
  void update_config_impl(xeus::xkernel_configuration&) const override {}

  null_messenger m_messenger;
};

xeus::xpub_message status_message() {
  return xeus::xpub_message("status", nl::json::object(), nl::json::object(),
                            nl::json::object(), {{"execution_state", "busy"}}, {});
}

xeus::xmessage request(const std::string& msg_type) {
  return xeus::xmessage({}, {{"msg_type", msg_type}}, nl::json::object(), nl::json::object(),
                        nl::json::object(), {});
}

}  // namespace

TEST_CASE("publishing from many threads reaches the inner server one message at a time") {
  auto owned = std::make_unique<recording_server>();
  recording_server& inner = *owned;
  interp_rpc::kernel::serialized_server server(std::move(owned));

  constexpr int threads = 8;
  constexpr int per_thread = 200;
  std::vector<std::thread> publishers;
  for (int t = 0; t < threads; ++t) {
    publishers.emplace_back([&server, t] {
      for (int i = 0; i < per_thread; ++i) {
        server.publish(status_message(),
                       t % 2 == 0 ? xeus::channel::SHELL : xeus::channel::CONTROL);
      }
    });
  }
  for (std::thread& publisher : publishers) {
    publisher.join();
  }
  CHECK(inner.published == threads * per_thread);
  CHECK(inner.most_inside == 1);
}

TEST_CASE("messages the inner server receives reach the listeners of the decorator") {
  auto owned = std::make_unique<recording_server>();
  recording_server& inner = *owned;
  interp_rpc::kernel::serialized_server server(std::move(owned));

  std::vector<std::string> received;
  server.register_shell_listener(
      [&](xeus::xmessage msg) { received.push_back("shell:" + msg.header()["msg_type"].get<std::string>()); });
  server.register_control_listener(
      [&](xeus::xmessage msg) { received.push_back("control:" + msg.header()["msg_type"].get<std::string>()); });

  inner.deliver_shell(request("execute_request"));
  inner.deliver_control(request("interrupt_request"));
  CHECK(received == std::vector<std::string>{"shell:execute_request", "control:interrupt_request"});
}
