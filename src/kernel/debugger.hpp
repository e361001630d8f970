// JupyterLab's debugger: debug_request on the control channel, answered by
// debugpy through the kernel's Python side (interp_rpc_kernel/debugger.py),
// and debugpy's events published on IOPub as debug_event messages.
//
// Threads. xeus calls process_request on the control thread, which hands the
// request to the Python debugger's own thread over a socket pair and waits
// for its reply without the GIL. The control thread runs Python only once,
// on the first request, to start that thread: by then no debugger traces
// anything. From then on debugpy may trace and stop any thread that runs
// Python, and the control thread, which must stay free to interrupt or stop
// the kernel while a cell waits at a breakpoint, runs none.
//
// Nothing of this runs, and debugpy is not imported, until the first
// debug_request.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <xeus/xdebugger.hpp>
#include <xeus/xkernel.hpp>

namespace interp_rpc::kernel {

class interpreter;

class debugger final : public xeus::xdebugger {
 public:
  // Sets interpreter's before_interrupt hook, for the life of the kernel.
  explicit debugger(interpreter& interpreter);
  ~debugger() override;

  // How long a request waits for the Python side's reply: longer than that
  // side waits for debugpy (debugger.py's ADAPTER_TIMEOUT), so it answers
  // first, with the reason.
  static constexpr int reply_timeout_ms = 90'000;
  // How long an interrupt or a stop waits for the Python side to let a
  // stopped cell go before it interrupts anyway.
  static constexpr int release_timeout_ms = 10'000;

  // What the Python side publishes (debug_event) goes to IOPub with this
  // parent: the last debug_request. Shared with the publisher Python holds,
  // which outlives this object.
  struct event_channel;

 private:
  nl::json process_request_impl(const nl::json& header, const nl::json& message) override;
  void start_python_side();
  // Control thread, before an interrupt or a stop: a cell stopped at a
  // breakpoint is let go first (see interp_rpc_kernel/debugger.py), so that
  // the interrupt reaches the cell's code, not debugpy's wait.
  void before_interrupt(bool stopping);
  // Writes one frame ({"id": id, key: value}), then reads frames until the
  // reply to `id`. Null if the Python side is too slow.
  nl::json exchange(const char* key, const nl::json& value, int timeout_ms);

  interpreter& m_interpreter;
  std::shared_ptr<event_channel> p_events;
  int m_fd = -1;  // our end of the socket pair
  bool m_started = false;
  std::uint64_t m_next_id = 1;
  std::string m_received;  // bytes read past the last reply
};

// The xkernel debugger builder for a kernel with this interpreter.
xeus::xkernel::debugger_builder make_debugger_builder(interpreter& interpreter);

}  // namespace interp_rpc::kernel
