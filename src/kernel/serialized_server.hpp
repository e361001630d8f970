// A xeus server whose IOPub publishing is safe from any thread.
//
// xeus-zmq sends every IOPub message on the zmq socket of the channel it names
// (the shell thread's or the control thread's), with no lock: a zmq socket used
// by two threads at once corrupts its state or aborts. Output does come from
// several threads here: the main thread (status, results, streams), the control
// thread (interrupt and shutdown status) and any thread the user or the pool
// starts. This decorator owns the real server and sends every message through
// one mutex; everything else it forwards untouched.
#pragma once

#include <memory>
#include <mutex>

#include <xeus/xkernel.hpp>
#include <xeus/xserver.hpp>

namespace interp_rpc::kernel {

class serialized_server final : public xeus::xserver {
 public:
  explicit serialized_server(std::unique_ptr<xeus::xserver> inner);

 private:
  xeus::xcontrol_messenger& get_control_messenger_impl() override;
  void send_shell_impl(xeus::xmessage message) override;
  void send_control_impl(xeus::xmessage message) override;
  void send_stdin_impl(xeus::xmessage message) override;
  void publish_impl(xeus::xpub_message message, xeus::channel c) override;
  void start_impl(xeus::xpub_message message) override;
  void abort_queue_impl(const listener& l, long polling_interval) override;
  void stop_impl() override;
  void update_config_impl(xeus::xkernel_configuration& config) const override;

  std::unique_ptr<xeus::xserver> p_inner;
  std::mutex m_publish_mutex;
};

// xeus-zmq's "shell on the main thread" server, serialized: the main thread
// runs the cells (CPython delivers signals, hence KeyboardInterrupt, to the
// main thread only), the control thread stays free to interrupt them.
std::unique_ptr<xeus::xserver> make_serialized_shell_main_server(
    xeus::xcontext& context, const xeus::xconfiguration& config, nl::json::error_handler_t eh);

}  // namespace interp_rpc::kernel
