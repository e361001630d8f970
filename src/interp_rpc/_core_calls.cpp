#include "_core_calls.hpp"

#include <cmath>
#include <limits>
#include <utility>

#include "core/argument_copy.hpp"

namespace interp_rpc::binding {

namespace {

unsigned long g_main_thread_ident = 0;

thread_local bool t_on_completion_thread = false;

bool wait_for_call(core::call& c, std::optional<double> timeout) {
  if (c.done()) return true;
  return wait_interruptibly([&](std::int64_t slice) { return c.wait_for(slice); }, timeout);
}

// Settles a finished call whose claim this party won: the future's outcome,
// then what the call holds. Requires the main GIL.
void settle_claimed(core::call& c) {
  if (c.completion_owner != nullptr) {
    try {
      py::handle(c.completion_owner).attr("_settle")();
    } catch (py::error_already_set& e) {
      e.discard_as_unraisable("interp_rpc: settling a finished call");
    }
  }
  release_call_resources(c, c.target);
}

}  // namespace

void set_main_thread(unsigned long ident) noexcept { g_main_thread_ident = ident; }

bool on_main_thread() noexcept { return PyThread_get_thread_ident() == g_main_thread_ident; }

std::int64_t to_timeout_ns(std::optional<double> seconds) {
  if (!seconds) return -1;
  if (std::isnan(*seconds)) throw py::value_error("timeout must be a number of seconds, not nan");
  if (*seconds <= 0) return 0;
  constexpr double max_seconds = static_cast<double>(std::numeric_limits<std::int64_t>::max()) / 1e9;
  if (*seconds >= max_seconds) return -1;
  return static_cast<std::int64_t>(*seconds * 1e9);
}

bool on_completion_thread() noexcept { return t_on_completion_thread; }

void release_call_resources(core::call& c, const std::string& target) {
  Py_XDECREF(std::exchange(c.completion_owner, nullptr));
  if (c.held_buffers.empty()) return;
  if (c.buffers_retained.load()) {
    // The target kept a view of the caller's memory: freeing it would leave
    // the worker reading freed memory, so it stays alive for good.
    const std::string message =
        "target '" + target + "' kept a view of an argument buffer after the call returned; "
        "interp-rpc keeps that buffer alive for the rest of the process. Copy the data "
        "(bytes(view)) if a target needs it after the call.";
    if (PyErr_WarnEx(PyExc_RuntimeWarning, message.c_str(), 2) < 0) PyErr_Clear();
  } else {
    for (Py_buffer& b : c.held_buffers) PyBuffer_Release(&b);
  }
  c.held_buffers.clear();
}


void settle_completed(std::vector<core::call_ptr>& batch) {
  t_on_completion_thread = true;
  const auto left_to_us = [](const core::call_ptr& c) { return c->left_to_completion_thread(); };
  if (std::none_of(batch.begin(), batch.end(), left_to_us)) return;
  py::gil_scoped_acquire gil;
  for (const core::call_ptr& c : batch) {
    if (c->left_to_completion_thread() && c->try_claim()) settle_claimed(*c);
  }
}

void acquire_buffers(const py::list& objects, core::call& c, std::vector<core::buffer_view>& views) {
  c.held_buffers.reserve(objects.size());
  for (const py::handle& obj : objects) {
    Py_buffer view;
    if (PyObject_GetBuffer(obj.ptr(), &view, PyBUF_SIMPLE) < 0) {
      for (Py_buffer& b : c.held_buffers) PyBuffer_Release(&b);
      c.held_buffers.clear();
      throw py::error_already_set();
    }
    c.held_buffers.push_back(view);
  }
  views.reserve(c.held_buffers.size());
  for (const Py_buffer& b : c.held_buffers) views.push_back({b.buf, b.len});
}

int status_of(core::call_outcome outcome) {
  switch (outcome) {
    case core::call_outcome::replied: return status_replied;
    case core::call_outcome::worker_died: return code(core::call_status::worker_died);
    case core::call_outcome::cancelled: return code(core::call_status::cancelled);
    case core::call_outcome::pool_broken: return code(core::call_status::pool_broken);
    case core::call_outcome::pending: break;
  }
  return status_timed_out;
}

py::dict timing_dict(const core::call_timing& t) {
  py::dict d;
  d["submitted_ns"] = t.submitted_ns;
  d["enqueued_ns"] = t.enqueued_ns;
  d["started_ns"] = t.started_ns;
  d["finished_ns"] = t.finished_ns;
  d["serialize_ns"] = t.serialize_ns;
  d["deserialize_ns"] = t.deserialize_ns;
  d["result_serialize_ns"] = t.result_serialize_ns;
  return d;
}

bool call_handle::wait(std::optional<double> timeout) {
  m_call->begin_direct_wait();
  try {
    if (m_call->argument_copy) {
      py::gil_scoped_release unlocked;
      core::stand_by_for_arguments(*m_call, to_timeout_ns(timeout));
    }
    wait_for_call(*m_call, timeout);
  } catch (...) {
    // Interrupted (Ctrl-C). A call that finished meanwhile may have been
    // left to us by the completion thread, and our caller is not going to
    // settle it: settle it here.
    if (m_call->end_direct_wait() && m_call->try_claim()) settle_claimed(*m_call);
    throw;
  }
  return m_call->end_direct_wait();
}

bool call_handle::claim() {
  if (m_call->try_claim()) m_won_claim = true;
  return m_won_claim;
}

bool call_handle::release() {
  if (!m_won_claim) return false;
  release_call_resources(*m_call, m_call->target);
  return true;
}

py::tuple call_handle::take() {
  claim();
  release();
  const core::call& c = *m_call;
  return py::make_tuple(status_of(c.outcome()), c.reply_kind(), reply_of(c), c.worker_index());
}

py::object reply_of(const core::call& c) {
  py::bytes reply(c.reply());
  if (!c.held) return reply;
  // The values the reply names rather than carries, copied here, once.
  py::object held = py::reinterpret_steal<py::object>(c.held->copy_out());
  if (!held) throw py::error_already_set();
  py::object with_held = py::module_::import("interp_rpc._worker.wire").attr("WithHeld")(reply);
  with_held.attr("held") = held;
  return with_held;
}

}  // namespace interp_rpc::binding
