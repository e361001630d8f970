#include "kernel/serialized_server.hpp"

#include <utility>

#include <xeus-zmq/xserver_zmq_split.hpp>

namespace interp_rpc::kernel {

serialized_server::serialized_server(std::unique_ptr<xeus::xserver> inner)
    : p_inner(std::move(inner)) {
  // The inner server's runners deliver incoming messages to its listeners;
  // pass them on to ours, which xeus's kernel core registers on this object.
  p_inner->register_shell_listener(
      [this](xeus::xmessage msg) { notify_shell_listener(std::move(msg)); });
  p_inner->register_control_listener(
      [this](xeus::xmessage msg) { notify_control_listener(std::move(msg)); });
  p_inner->register_stdin_listener(
      [this](xeus::xmessage msg) { notify_stdin_listener(std::move(msg)); });
  p_inner->register_internal_listener(
      [this](nl::json msg) { return notify_internal_listener(std::move(msg)); });
}

xeus::xcontrol_messenger& serialized_server::get_control_messenger_impl() {
  return p_inner->get_control_messenger();
}

void serialized_server::send_shell_impl(xeus::xmessage message) {
  p_inner->send_shell(std::move(message));
}

void serialized_server::send_control_impl(xeus::xmessage message) {
  p_inner->send_control(std::move(message));
}

void serialized_server::send_stdin_impl(xeus::xmessage message) {
  p_inner->send_stdin(std::move(message));
}

void serialized_server::publish_impl(xeus::xpub_message message, xeus::channel c) {
  std::lock_guard lock(m_publish_mutex);
  p_inner->publish(std::move(message), c);
}

void serialized_server::start_impl(xeus::xpub_message message) {
  // The inner server publishes this "starting" status itself, bypassing the
  // lock; that happens before the kernel answers any request, so only a thread
  // started by startup code could race with it.
  p_inner->start(std::move(message));
}

void serialized_server::abort_queue_impl(const listener& l, long polling_interval) {
  p_inner->abort_queue(l, polling_interval);
}

void serialized_server::stop_impl() { p_inner->stop(); }

void serialized_server::update_config_impl(xeus::xkernel_configuration& config) const {
  p_inner->update_config(config);
}

std::unique_ptr<xeus::xserver> make_serialized_shell_main_server(
    xeus::xcontext& context, const xeus::xconfiguration& config, nl::json::error_handler_t eh) {
  return std::make_unique<serialized_server>(xeus::make_xserver_shell_main(context, config, eh));
}

}  // namespace interp_rpc::kernel
