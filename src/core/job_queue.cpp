#include "core/job_queue.hpp"

#include <algorithm>
#include <utility>

#include "core/spin.hpp"

namespace interp_rpc::core {

namespace {
std::size_t lanes(int workers) { return static_cast<std::size_t>(std::max(workers, 0)); }
}  // namespace

job_queue::job_queue(int workers, std::int64_t spin_ns)
    : m_wake(std::make_unique<std::condition_variable[]>(lanes(workers))),
      m_pinned(lanes(workers)),
      m_lane_closed(lanes(workers), false),
      m_handed(lanes(workers)),
      m_sleeping(lanes(workers), false),
      m_spin_ns(spin_ns) {}

job_queue::push_result job_queue::push(call_ptr c, int worker) {
  int wake = worker;
  {
    std::lock_guard lock(m_mutex);
    if (m_broken) return push_result::broken;
    if (m_closed) return push_result::closed;
    if (worker >= 0) {
      if (m_lane_closed.at(static_cast<std::size_t>(worker))) return push_result::broken;
      m_pinned[static_cast<std::size_t>(worker)].push_back(std::move(c));
      update_size_locked();
    } else {
      wake = place_shared_locked(std::move(c));
    }
  }
  if (wake >= 0) m_wake[static_cast<std::size_t>(wake)].notify_one();
  return push_result::queued;
}

job_queue::push_result job_queue::push_many(const std::vector<call_ptr>& calls) {
  std::vector<int> woken;
  {
    std::lock_guard lock(m_mutex);
    if (m_broken) return push_result::broken;
    if (m_closed) return push_result::closed;
    for (const call_ptr& c : calls) {
      const int wake = place_shared_locked(c);
      if (wake >= 0) woken.push_back(wake);
    }
  }
  for (const int wake : woken) m_wake[static_cast<std::size_t>(wake)].notify_one();
  return push_result::queued;
}

int job_queue::place_shared_locked(call_ptr c) {
  // Each idle worker is handed one call: the spinning one first (it needs
  // no wake-up, and sees the hand-off within microseconds), then a sleeper.
  // A spinner takes one call only: a second left for it in the shared lane
  // would wait behind the first while a sleeper slept (a first call that
  // waits for the second never ended).
  const int spinner = m_spinner.load(std::memory_order_acquire);
  const int idle = spinner >= 0 && !m_handed[static_cast<std::size_t>(spinner)]
                       ? spinner
                       : idle_sleeper_locked();
  if (idle >= 0) {
    m_handed[static_cast<std::size_t>(idle)] = std::move(c);
    m_handoffs.fetch_add(1, std::memory_order_release);
    return idle == spinner ? -1 : idle;
  }
  // Every worker is busy or has a call handed to it: the first that is free
  // takes it; a worker about to sleep sees it first (it looks under this
  // lock).
  m_shared.push_back(std::move(c));
  update_size_locked();
  return -1;
}

int job_queue::idle_sleeper_locked() const {
  for (std::size_t i = 0; i < m_sleeping.size(); ++i) {
    if (m_sleeping[i] && !m_handed[i]) return static_cast<int>(i);
  }
  return -1;
}

std::size_t job_queue::sleeping() const {
  std::lock_guard lock(m_mutex);
  std::size_t n = 0;
  for (std::size_t i = 0; i < m_sleeping.size(); ++i) n += m_sleeping[i] && !m_handed[i];
  return n;
}

std::size_t job_queue::waiting() const {
  std::lock_guard lock(m_mutex);
  std::size_t n = m_spinner.load(std::memory_order_acquire) >= 0 ? 1 : 0;
  for (std::size_t i = 0; i < m_sleeping.size(); ++i) n += m_sleeping[i];
  return n;
}

unsigned job_queue::generation() const { return m_generation.load(std::memory_order_acquire); }

call_ptr job_queue::pop(int worker, unsigned seen_generation) {
  const auto slot = static_cast<std::size_t>(worker);
  // Most calls arrive right after the previous reply: look before sleeping,
  // unless another idle worker is looking already. A call handed to this
  // worker while it spins shows as a new hand-off.
  const unsigned handoffs = m_handoffs.load(std::memory_order_acquire);
  int nobody = -1;
  if (m_spinner.compare_exchange_strong(nobody, worker, std::memory_order_acq_rel)) {
    spin_until([&] { return m_size.load(std::memory_order_acquire) != 0 ||
                            m_handoffs.load(std::memory_order_acquire) != handoffs ||
                            m_generation.load(std::memory_order_acquire) != seen_generation; },
               m_spin_ns);
    m_spinner.store(-1, std::memory_order_release);
  }
  std::unique_lock lock(m_mutex);
  auto& mine = m_pinned.at(slot);
  m_sleeping[slot] = true;
  m_wake[slot].wait(lock, [&] {
    return m_handed[slot] || !mine.empty() || !m_shared.empty() || m_closed || m_broken ||
           m_generation.load(std::memory_order_relaxed) != seen_generation;
  });
  m_sleeping[slot] = false;
  if (m_handed[slot]) return std::exchange(m_handed[slot], nullptr);
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
  wake_all();
}

void job_queue::wake_all() {
  for (std::size_t i = 0; i < m_pinned.size(); ++i) m_wake[i].notify_all();
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
  wake_all();
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
  wake_all();
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
