#include "core/job_queue.hpp"

#include <algorithm>

#include "core/spin.hpp"

namespace interp_rpc::core {

job_queue::job_queue(int workers)
    : m_pinned(static_cast<std::size_t>(std::max(workers, 0))),
      m_lane_closed(static_cast<std::size_t>(std::max(workers, 0)), false) {}

job_queue::push_result job_queue::push(call_ptr c, int worker) {
  {
    std::lock_guard lock(m_mutex);
    if (m_broken) return push_result::broken;
    if (m_closed) return push_result::closed;
    if (worker < 0) {
      m_shared.push_back(std::move(c));
    } else {
      if (m_lane_closed.at(static_cast<std::size_t>(worker))) return push_result::broken;
      m_pinned[static_cast<std::size_t>(worker)].push_back(std::move(c));
    }
    update_size_locked();
  }
  // A pinned call must reach its own worker, whichever one notify_one wakes.
  if (worker < 0) {
    m_cv.notify_one();
  } else {
    m_cv.notify_all();
  }
  return push_result::queued;
}

unsigned job_queue::generation() const { return m_generation.load(std::memory_order_acquire); }

call_ptr job_queue::pop(int worker, unsigned seen_generation) {
  // Most calls arrive right after the previous reply: look before sleeping.
  spin_until([&] { return m_size.load(std::memory_order_acquire) != 0 ||
                          m_generation.load(std::memory_order_acquire) != seen_generation; },
             pop_spin_ns);
  std::unique_lock lock(m_mutex);
  auto& mine = m_pinned.at(static_cast<std::size_t>(worker));
  m_cv.wait(lock, [&] {
    return !mine.empty() || !m_shared.empty() || m_closed || m_broken ||
           m_generation.load(std::memory_order_relaxed) != seen_generation;
  });
  auto& lane = !mine.empty() ? mine : m_shared;
  if (lane.empty()) return nullptr;
  call_ptr c = std::move(lane.front());
  lane.pop_front();
  update_size_locked();
  return c;
}

void job_queue::wake_up() {
  {
    std::lock_guard lock(m_mutex);
    m_generation.fetch_add(1, std::memory_order_acq_rel);
  }
  m_cv.notify_all();
}

bool job_queue::remove(const call_ptr& c) {
  std::lock_guard lock(m_mutex);
  const auto erase_from = [&](std::deque<call_ptr>& lane) {
    const auto it = std::find(lane.begin(), lane.end(), c);
    if (it == lane.end()) return false;
    lane.erase(it);
    update_size_locked();
    return true;
  };
  if (erase_from(m_shared)) return true;
  return std::any_of(m_pinned.begin(), m_pinned.end(), erase_from);
}

std::vector<call_ptr> job_queue::close_lane(int worker) {
  std::lock_guard lock(m_mutex);
  m_lane_closed.at(static_cast<std::size_t>(worker)) = true;
  auto& lane = m_pinned.at(static_cast<std::size_t>(worker));
  std::vector<call_ptr> drained(std::make_move_iterator(lane.begin()),
                                std::make_move_iterator(lane.end()));
  lane.clear();
  update_size_locked();
  return drained;
}

void job_queue::close() {
  {
    std::lock_guard lock(m_mutex);
    m_closed = true;
  }
  m_cv.notify_all();
}

std::vector<call_ptr> job_queue::close_and_drain() { return stop_and_drain(m_closed); }

std::vector<call_ptr> job_queue::break_and_drain() { return stop_and_drain(m_broken); }

std::vector<call_ptr> job_queue::stop_and_drain(bool& flag) {
  std::vector<call_ptr> drained;
  {
    std::lock_guard lock(m_mutex);
    flag = true;
    drained = take_all_locked();
  }
  m_cv.notify_all();
  return drained;
}

std::vector<call_ptr> job_queue::take_all_locked() {
  std::vector<call_ptr> drained(std::make_move_iterator(m_shared.begin()),
                                std::make_move_iterator(m_shared.end()));
  m_shared.clear();
  for (auto& lane : m_pinned) {
    drained.insert(drained.end(), std::make_move_iterator(lane.begin()),
                   std::make_move_iterator(lane.end()));
    lane.clear();
  }
  update_size_locked();
  return drained;
}

void job_queue::update_size_locked() {
  std::size_t total = m_shared.size();
  for (const auto& lane : m_pinned) total += lane.size();
  m_size.store(total, std::memory_order_release);
}

std::size_t job_queue::size() const { return m_size.load(std::memory_order_acquire); }

bool job_queue::closed() const {
  std::lock_guard lock(m_mutex);
  return m_closed || m_broken;
}

}  // namespace interp_rpc::core
