#include "core/job_queue.hpp"

#include <algorithm>

#include "core/spin.hpp"

namespace interp_rpc::core {

job_queue::push_result job_queue::push(call_ptr c) {
  {
    std::lock_guard lock(m_mutex);
    if (m_broken) return push_result::broken;
    if (m_closed) return push_result::closed;
    m_calls.push_back(std::move(c));
    m_size.store(m_calls.size(), std::memory_order_release);
  }
  m_cv.notify_one();
  return push_result::queued;
}

unsigned job_queue::generation() const { return m_generation.load(std::memory_order_acquire); }

call_ptr job_queue::pop(unsigned seen_generation) {
  // Most calls arrive right after the previous reply: look before sleeping.
  spin_until([&] { return m_size.load(std::memory_order_acquire) != 0 ||
                          m_generation.load(std::memory_order_acquire) != seen_generation; },
             pop_spin_ns);
  std::unique_lock lock(m_mutex);
  m_cv.wait(lock, [&] {
    return !m_calls.empty() || m_closed || m_broken ||
           m_generation.load(std::memory_order_relaxed) != seen_generation;
  });
  if (m_calls.empty()) return nullptr;
  call_ptr c = std::move(m_calls.front());
  m_calls.pop_front();
  m_size.store(m_calls.size(), std::memory_order_release);
  return c;
}

bool job_queue::remove(const call_ptr& c) {
  std::lock_guard lock(m_mutex);
  const auto it = std::find(m_calls.begin(), m_calls.end(), c);
  if (it == m_calls.end()) return false;
  m_calls.erase(it);
  m_size.store(m_calls.size(), std::memory_order_release);
  return true;
}

void job_queue::wake_up() {
  {
    std::lock_guard lock(m_mutex);
    m_generation.fetch_add(1, std::memory_order_acq_rel);
  }
  m_cv.notify_all();
}

void job_queue::close() {
  {
    std::lock_guard lock(m_mutex);
    m_closed = true;
  }
  m_cv.notify_all();
}

std::vector<call_ptr> job_queue::close_and_drain() {
  std::vector<call_ptr> drained;
  {
    std::lock_guard lock(m_mutex);
    m_closed = true;
    drained.assign(std::make_move_iterator(m_calls.begin()), std::make_move_iterator(m_calls.end()));
    m_calls.clear();
    m_size.store(0, std::memory_order_release);
  }
  m_cv.notify_all();
  return drained;
}

std::vector<call_ptr> job_queue::break_and_drain() {
  std::vector<call_ptr> drained;
  {
    std::lock_guard lock(m_mutex);
    m_broken = true;
    drained.assign(std::make_move_iterator(m_calls.begin()), std::make_move_iterator(m_calls.end()));
    m_calls.clear();
    m_size.store(0, std::memory_order_release);
  }
  m_cv.notify_all();
  return drained;
}

bool job_queue::closed() const {
  std::lock_guard lock(m_mutex);
  return m_closed || m_broken;
}

std::size_t job_queue::size() const {
  std::lock_guard lock(m_mutex);
  return m_calls.size();
}

}  // namespace interp_rpc::core
