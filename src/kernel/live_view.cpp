#include "kernel/live_view.hpp"

#include <algorithm>
#include <chrono>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>
#include <pybind11/stl.h>
#include <xeus/xinterpreter.hpp>

#include "core/clock.hpp"
#include "core/thread_start.hpp"
#include "kernel/interpreter.hpp"
#include "kernel/output_parent.hpp"

namespace py = pybind11;
namespace nl = nlohmann;

namespace interp_rpc::kernel {

namespace {

// Every live view that exists; a view lives as long as its Python object.
std::mutex g_views_mutex;
std::set<live_view*> g_views;  // guarded by g_views_mutex

}  // namespace

live_view::live_view(core::live_feed feed, live_view_options options,
                     xeus::xrequest_context parent)
    : m_feed(std::move(feed)),
      m_options(std::move(options)),
      m_done(m_options.after_seq, m_options.first_call_id) {
  m_thread = core::start_thread("the live view's publisher thread", &live_view::run, this,
                                std::move(parent));
  std::lock_guard lock(g_views_mutex);
  g_views.insert(this);
}

live_view::~live_view() {
  {
    std::lock_guard lock(g_views_mutex);
    g_views.erase(this);
  }
  stop();
}

void stop_live_views() {
  std::set<live_view*> views;
  {
    std::lock_guard lock(g_views_mutex);
    views = g_views;
  }
  for (live_view* view : views) {
    view->stop();
  }
}

std::uint64_t live_view::stop() {
  {
    std::lock_guard lock(m_mutex);
    m_stop = true;
  }
  m_wake.notify_all();
  if (m_thread.joinable()) m_thread.join();
  std::lock_guard lock(m_mutex);
  return m_updates;
}

void live_view::run(xeus::xrequest_context parent) {
  const thread_parent pinned(std::move(parent));
  const auto refresh = std::chrono::duration<double>(m_options.refresh_seconds);
  const auto until = m_options.duration_seconds
                         ? std::optional(std::chrono::steady_clock::now() +
                                         std::chrono::duration<double>(*m_options.duration_seconds))
                         : std::nullopt;
  std::unique_lock lock(m_mutex);
  while (!m_wake.wait_for(lock, refresh, [this] { return m_stop; })) {
    const bool over = until && std::chrono::steady_clock::now() >= *until;
    lock.unlock();
    publish(over ? m_options.ended_note : std::string{});
    lock.lock();
    ++m_updates;
    if (over) {
      m_ended = true;
      return;
    }
  }
}

bool live_view::ended() {
  std::lock_guard lock(m_mutex);
  return m_ended;
}

void live_view::publish(std::string note) {
  core::live_progress progress;
  progress.target = m_options.target;
  progress.total = m_options.total;
  progress.done = std::min(m_done.update(*m_feed.log), m_options.total);
  progress.elapsed_seconds = static_cast<double>(core::now_ns() - m_options.started_ns) * 1e-9;
  const auto view = core::render_live_view(m_feed.board->snapshot(), progress,
                                           m_options.stuck_after_seconds, std::move(note));
  nl::json data = {{"text/html", view.html}, {"text/plain", view.text}};
  nl::json transient = {{"display_id", m_options.display_id}};
  xeus::get_interpreter().update_display_data(std::move(data), nl::json::object(),
                                              std::move(transient));
}

void bind_live_view(py::module_& m) {
  py::class_<live_view>(m, "LiveView")
      .def("stop", &live_view::stop, py::call_guard<py::gil_scoped_release>(),
           "Stop publishing; returns how many updates were published.")
      .def_property_readonly("ended", &live_view::ended,
                             "Whether it ended on its own and published its ended note.");
  m.def(
      "start_live_view",
      [](const py::capsule& feed, std::string display_id, std::string target, std::int64_t total,
         std::uint64_t after_seq, std::uint64_t first_call_id, std::int64_t started_ns,
         double stuck_after, double refresh, std::optional<double> duration,
         std::string ended_note) {
        auto* source = static_cast<core::live_feed*>(
            PyCapsule_GetPointer(feed.ptr(), core::live_feed_capsule_name));
        if (source == nullptr) throw py::error_already_set();
        live_view_options options{std::move(display_id), std::move(target), total,
                                  after_seq, first_call_id, started_ns, stuck_after, refresh,
                                  duration, std::move(ended_note)};
        // The cell running now: the view's updates belong to it.
        auto parent = static_cast<interpreter&>(xeus::get_interpreter()).current_request();
        return std::make_unique<live_view>(*source, std::move(options), std::move(parent));
      },
      py::arg("feed"), py::arg("display_id"), py::arg("target"), py::arg("total"),
      py::arg("after_seq"), py::arg("first_call_id"), py::arg("started_ns"), py::arg("stuck_after"),
      py::arg("refresh"), py::arg("duration"), py::arg("ended_note") = "",
      "Publish the pool's live status into display_id from a C++ thread, with no GIL.");
}

}  // namespace interp_rpc::kernel
