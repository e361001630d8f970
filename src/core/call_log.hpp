// A bounded log of finished calls, for profiling, plus lifetime totals.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "core/call.hpp"

namespace interp_rpc::core {

struct call_record {
  std::uint64_t seq;  // position in the log: increases in the order calls finished
  std::uint64_t id;
  int worker_index;
  std::string target;
  std::int64_t item_index;
  std::int64_t item_count;
  call_outcome outcome;
  int reply_kind;
  call_timing timing;
};

struct call_totals {
  std::uint64_t calls = 0;           // finished calls (any outcome)
  std::uint64_t items = 0;           // items in them (map chunks count every item)
  std::uint64_t replied = 0;
  std::uint64_t failed = 0;          // worker_died, cancelled, pool_broken
  std::int64_t queue_wait_ns = 0;    // enqueued -> started
  std::int64_t run_ns = 0;           // started -> finished (includes unpickling)
  std::int64_t serialize_ns = 0;
  std::int64_t deserialize_ns = 0;
  std::int64_t result_serialize_ns = 0;
};

class call_log {
 public:
  explicit call_log(std::size_t capacity) : m_capacity(capacity) {}

  void add(const call& c, call_outcome outcome, int reply_kind, int worker_index);
  // Records logged after position `after_seq` (0: all kept), oldest first.
  // Polling with the last seq seen returns every record exactly once.
  std::vector<call_record> records_after(std::uint64_t after_seq) const;
  call_totals totals() const;
  void clear();

 private:
  const std::size_t m_capacity;
  mutable std::mutex m_mutex;
  std::deque<call_record> m_records;
  call_totals m_totals;
  std::uint64_t m_last_seq = 0;
};

}  // namespace interp_rpc::core
