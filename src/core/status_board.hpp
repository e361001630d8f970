// What every worker is doing, readable from any thread without any GIL.
//
// Workers write their own slot; readers (pool.status(), the kernel's live
// status publisher) take snapshots. Numbers are atomics; the target name is a
// short string behind a per-slot mutex that no GIL holder ever waits on for
// long.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace interp_rpc::core {

enum class worker_state : std::uint8_t { starting, idle, busy, dead, stopped };

const char* to_string(worker_state state) noexcept;

struct worker_snapshot {
  int index = 0;
  worker_state state = worker_state::starting;
  std::uint64_t call_id = 0;       // current call, 0 when none
  std::string target;              // current call's target, empty when none
  std::int64_t item_index = -1;    // current map item (first of the chunk), or -1
  double busy_seconds = 0;         // how long the current call has run
  std::uint64_t calls_done = 0;
  double busy_seconds_total = 0;   // time spent in finished calls
  std::string detail;              // why a dead worker died
};

class status_board {
 public:
  explicit status_board(int workers);

  void set_state(int index, worker_state state);
  void begin_call(int index, std::uint64_t call_id, const std::string& target,
                  std::int64_t item_index, std::int64_t started_ns);
  void end_call(int index, std::int64_t finished_ns);
  void mark_dead(int index, const std::string& detail);

  worker_state state(int index) const;
  std::vector<worker_snapshot> snapshot() const;
  int size() const noexcept { return static_cast<int>(m_slots.size()); }

 private:
  struct slot {
    std::atomic<worker_state> state{worker_state::starting};
    std::atomic<std::uint64_t> call_id{0};
    std::atomic<std::int64_t> item_index{-1};
    std::atomic<std::int64_t> busy_since_ns{0};
    std::atomic<std::uint64_t> calls_done{0};
    std::atomic<std::int64_t> busy_ns_total{0};
    mutable std::mutex text_mutex;
    std::string target;
    std::string detail;
  };
  std::vector<std::unique_ptr<slot>> m_slots;
};

}  // namespace interp_rpc::core
