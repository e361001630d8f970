// interp_rpc._core's side of a call: how the Python layer waits for one
// (interruptibly, GIL released), settles it (its future, the caller's
// buffers), and holds it (call_handle). The engine and the module are in
// _core.cpp.
#pragma once

#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/call.hpp"
#include "core/clock.hpp"
#include "core/codes.hpp"
#include "core/pool.hpp"

namespace interp_rpc::binding {

namespace py = pybind11;
namespace core = interp_rpc::core;

// How often a wait on the main thread runs the signal handlers (Ctrl-C).
constexpr std::int64_t signal_check_interval_ns = 50'000'000;

constexpr int code(core::call_status status) { return static_cast<int>(status); }
constexpr int status_replied = code(core::call_status::replied);
constexpr int status_timed_out = code(core::call_status::timed_out);
constexpr int status_closed = code(core::call_status::closed);
constexpr int status_broken = code(core::call_status::broken);

// Once, when the module is imported: the thread whose waits run the signal
// handlers (Python's main thread).
void set_main_thread(unsigned long ident) noexcept;
bool on_main_thread() noexcept;

// Seconds (None: no limit) as the engine's nanoseconds (< 0: no limit).
// Anything past what int64 nanoseconds hold (292 years), infinity included,
// means no limit.
std::int64_t to_timeout_ns(std::optional<double> seconds);

// Runs `wait(slice_ns) -> bool done` with the GIL released until it reports
// done or the timeout passed. On the main thread it waits in slices and runs
// signal handlers in between, raising whatever they raised
// (KeyboardInterrupt). Returns whether it finished.
template <class Wait>
bool wait_interruptibly(Wait&& wait, std::optional<double> timeout) {
  const bool main = on_main_thread();
  const std::int64_t limit = to_timeout_ns(timeout);
  const std::int64_t deadline = limit < 0 ? -1 : core::now_ns() + limit;
  while (true) {
    std::int64_t slice = limit < 0 ? -1 : std::max<std::int64_t>(0, deadline - core::now_ns());
    if (main && (slice < 0 || slice > signal_check_interval_ns)) {
      slice = signal_check_interval_ns;
    }
    bool done = false;
    {
      py::gil_scoped_release unlocked;
      done = wait(slice);
    }
    if (done) return true;
    if (main && PyErr_CheckSignals() != 0) throw py::error_already_set();
    if (deadline >= 0 && core::now_ns() >= deadline) return false;
  }
}

// Whether this thread is one of the engines' completion threads, the only
// threads that settle futures for nobody in particular (done-callbacks must
// not run there).
bool on_completion_thread() noexcept;

// Settles calls whose callers are not waiting on them directly (futures, and
// calls whose caller gave up waiting): the completion thread's side of the
// protocol in core/call.hpp. Runs on the engine's completion thread.
void settle_completed(std::vector<core::call_ptr>& batch);

// Releases what the call holds in the main interpreter: the future to
// settle and the caller's buffers. Requires the main GIL and a won claim (or
// a call never queued).
void release_call_resources(core::call& c, const std::string& target);

// Takes a Py_buffer of each object, so the worker can read their memory
// without copying it. Raises (having released what it took) on failure.
void acquire_buffers(const py::list& objects, core::call& c, std::vector<core::buffer_view>& views);

int status_of(core::call_outcome outcome);

py::dict timing_dict(const core::call_timing& t);

// A submitted call, as the Python layer sees it.
class call_handle {
 public:
  explicit call_handle(core::call_ptr c) : m_call(std::move(c)) {}

  // The caller's side of the settling protocol (core/call.hpp): true means
  // the call is done and this caller settles it (claim() decides against the
  // completion thread); on false or an exception, the completion thread does.
  bool wait(std::optional<double> timeout);

  bool claim();

  // Only the party that won the claim releases; anyone else (this handle
  // after losing to the completion thread) leaves it to the winner.
  bool release();

  // claim() and release(), then the reply: (status, reply kind, reply,
  // worker), in one crossing for a map's collection of each chunk.
  py::tuple take();

  const core::call_ptr& get() const { return m_call; }

 private:
  core::call_ptr m_call;
  bool m_won_claim = false;
};

// A finished call's reply as Python reads it: its bytes, or, when the reply
// holds values (core/held_result.hpp), a wire.WithHeld of them. Once per
// call: the held values are copied out of the worker then.
py::object reply_of(const core::call& c);

}  // namespace interp_rpc::binding
