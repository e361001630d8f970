#include "core/call.hpp"

#include <algorithm>
#include <chrono>

#include "core/spin.hpp"

namespace interp_rpc::core {

const char* to_string(call_outcome outcome) noexcept {
  switch (outcome) {
    case call_outcome::pending: return "pending";
    case call_outcome::replied: return "replied";
    case call_outcome::worker_died: return "worker_died";
    case call_outcome::cancelled: return "cancelled";
    case call_outcome::pool_broken: return "pool_broken";
  }
  return "unknown";
}

call::call(std::uint64_t id_, std::string target_, std::string request_,
           std::vector<buffer_view> buffers_, std::int64_t item_index_, std::int64_t item_count_)
    : id(id_),
      target(std::move(target_)),
      request(std::move(request_)),
      buffers(std::move(buffers_)),
      item_index(item_index_),
      item_count(item_count_) {}

call::~call() {
  // Never read: the worker may let go of the values.
  if (held) held->abandon();
}

bool call::complete(call_outcome outcome, int reply_kind, std::string reply, int worker_index) {
  bool notify = false;
  {
    std::lock_guard lock(m_mutex);
    if (m_outcome.load(std::memory_order_relaxed) != call_outcome::pending) return false;
    m_reply_kind = reply_kind;
    m_reply = std::move(reply);
    m_worker_index = worker_index;
    m_outcome.store(outcome, std::memory_order_seq_cst);  // D in call.hpp's settling protocol
    notify = m_has_waiters;
  }
  if (notify) m_cv.notify_all();
  return true;
}

bool call::wait_for(std::int64_t timeout_ns) {
  if (timeout_ns != 0 && spin_until([this] { return done(); },
                                    timeout_ns < 0 ? reply_spin_ns : std::min(timeout_ns, reply_spin_ns))) {
    return true;
  }
  std::unique_lock lock(m_mutex);
  m_has_waiters = true;
  const auto ready = [this] { return m_outcome.load(std::memory_order_relaxed) != call_outcome::pending; };
  if (timeout_ns < 0) {
    m_cv.wait(lock, ready);
    return true;
  }
  return m_cv.wait_for(lock, std::chrono::nanoseconds(timeout_ns), ready);
}

}  // namespace interp_rpc::core
