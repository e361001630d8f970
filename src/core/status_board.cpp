#include "core/status_board.hpp"

#include "core/clock.hpp"

namespace interp_rpc::core {

const char* to_string(worker_state state) noexcept {
  switch (state) {
    case worker_state::starting: return "starting";
    case worker_state::idle: return "idle";
    case worker_state::busy: return "busy";
    case worker_state::dead: return "dead";
    case worker_state::stopped: return "stopped";
  }
  return "unknown";
}

status_board::status_board(int workers) {
  m_slots.reserve(static_cast<std::size_t>(workers));
  for (int i = 0; i < workers; ++i) m_slots.push_back(std::make_unique<slot>());
}

void status_board::set_state(int index, worker_state state) {
  m_slots.at(static_cast<std::size_t>(index))->state.store(state, std::memory_order_release);
}

void status_board::begin_call(int index, std::uint64_t call_id, const std::string& target,
                              std::int64_t item_index, std::int64_t started_ns) {
  slot& s = *m_slots.at(static_cast<std::size_t>(index));
  {
    std::lock_guard lock(s.text_mutex);
    s.target = target;
  }
  s.item_index.store(item_index, std::memory_order_relaxed);
  s.busy_since_ns.store(started_ns, std::memory_order_relaxed);
  s.call_id.store(call_id, std::memory_order_relaxed);
  s.state.store(worker_state::busy, std::memory_order_release);
}

void status_board::end_call(int index, std::int64_t finished_ns) {
  slot& s = *m_slots.at(static_cast<std::size_t>(index));
  const std::int64_t since = s.busy_since_ns.load(std::memory_order_relaxed);
  s.busy_ns_total.fetch_add(finished_ns - since, std::memory_order_relaxed);
  s.calls_done.fetch_add(1, std::memory_order_relaxed);
  s.call_id.store(0, std::memory_order_relaxed);
  s.item_index.store(-1, std::memory_order_relaxed);
  {
    std::lock_guard lock(s.text_mutex);
    s.target.clear();
  }
  s.state.store(worker_state::idle, std::memory_order_release);
}

void status_board::mark_dead(int index, const std::string& detail) {
  slot& s = *m_slots.at(static_cast<std::size_t>(index));
  {
    std::lock_guard lock(s.text_mutex);
    s.detail = detail;
  }
  s.state.store(worker_state::dead, std::memory_order_release);
}

worker_state status_board::state(int index) const {
  return m_slots.at(static_cast<std::size_t>(index))->state.load(std::memory_order_acquire);
}

std::vector<worker_snapshot> status_board::snapshot() const {
  const std::int64_t now = now_ns();
  std::vector<worker_snapshot> out;
  out.reserve(m_slots.size());
  for (std::size_t i = 0; i < m_slots.size(); ++i) {
    const slot& s = *m_slots[i];
    worker_snapshot w;
    w.index = static_cast<int>(i);
    w.state = s.state.load(std::memory_order_acquire);
    w.call_id = s.call_id.load(std::memory_order_relaxed);
    w.item_index = s.item_index.load(std::memory_order_relaxed);
    w.calls_done = s.calls_done.load(std::memory_order_relaxed);
    w.busy_seconds_total = static_cast<double>(s.busy_ns_total.load(std::memory_order_relaxed)) * 1e-9;
    if (w.state == worker_state::busy) {
      w.busy_seconds = static_cast<double>(now - s.busy_since_ns.load(std::memory_order_relaxed)) * 1e-9;
    }
    {
      std::lock_guard lock(s.text_mutex);
      if (w.state == worker_state::busy) w.target = s.target;
      w.detail = s.detail;
    }
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace interp_rpc::core
