#include "core/call_log.hpp"

#include <algorithm>

namespace interp_rpc::core {

void call_log::add(const call& c, call_outcome outcome, int reply_kind, int worker_index) {
  call_record r{0,           c.id,    worker_index, c.target, c.item_index,
                c.item_count, outcome, reply_kind,   c.timing};
  std::lock_guard lock(m_mutex);
  r.seq = ++m_last_seq;
  m_totals.calls += 1;
  m_totals.items += static_cast<std::uint64_t>(c.item_count);
  if (r.outcome == call_outcome::replied) {
    m_totals.replied += 1;
    m_totals.queue_wait_ns += r.timing.started_ns - r.timing.enqueued_ns;
    m_totals.run_ns += r.timing.finished_ns - r.timing.started_ns;
    m_totals.deserialize_ns += r.timing.deserialize_ns;
    m_totals.result_serialize_ns += r.timing.result_serialize_ns;
  } else {
    m_totals.failed += 1;
  }
  m_totals.serialize_ns += r.timing.serialize_ns;
  if (m_records.size() == m_capacity) m_records.pop_front();
  m_records.push_back(std::move(r));
}

std::vector<call_record> call_log::records_after(std::uint64_t after_seq) const {
  std::lock_guard lock(m_mutex);
  // Records are kept in seq order: skip to the first one after after_seq.
  const auto first = std::upper_bound(m_records.begin(), m_records.end(), after_seq,
                                      [](std::uint64_t seq, const call_record& r) { return seq < r.seq; });
  return std::vector<call_record>(first, m_records.end());
}

call_totals call_log::totals() const {
  std::lock_guard lock(m_mutex);
  return m_totals;
}

void call_log::clear() {
  std::lock_guard lock(m_mutex);
  m_records.clear();
}

}  // namespace interp_rpc::core
