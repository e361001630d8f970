// The bytes of IOPub messages queued but not yet sent, and the back-pressure
// that keeps them bounded.
//
// Publishing only queues a message (kernel_server): a loop that prints
// faster than the frontend reads would otherwise grow the queue, hence the
// kernel's memory, without limit. So the queue has a byte bound. A message
// is always queued whole, never dropped or cut, even past the bound; the
// publisher waits afterwards, in wait_for_room(), at a point where it holds
// no lock of the kernel's (a stream's write, a display call), so that the
// wait can release the GIL without a lock-order deadlock.
//
// The wait ends when the io thread has sent enough, when the kernel stops
// (shutdown never waits for a frontend), or, on the main thread, when an
// interrupt comes (the caller then raises the KeyboardInterrupt).
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>

#include "kernel/wake_pipe.hpp"

namespace interp_rpc::kernel {

class iopub_backlog {
 public:
  // Queued bytes above which publishers wait.
  static constexpr std::size_t max_queued_bytes = 8 * 1024 * 1024;

  // The kernel's one backlog, shared by its server and its publishers.
  static iopub_backlog& shared();

  // Any thread: a message of `bytes` was queued, or has been sent.
  void queued(std::size_t bytes);
  void sent(std::size_t bytes);

  // Any thread, holding no lock of the kernel's; with or without the GIL
  // (released while it waits). Returns at once while there is room. Else
  // waits until there is, the kernel stops, or cancel_fd (-1: none) becomes
  // readable; returns false in that last case.
  bool wait_for_room(int cancel_fd);

  // The kernel stops: no wait blocks any more.
  void stop();

  // Any thread, without a lock: whether a publisher may go on at once.
  bool has_room() const noexcept {
    return m_bytes.load(std::memory_order_relaxed) <= max_queued_bytes;
  }

 private:
  bool full_locked() const noexcept { return !m_stopped && m_bytes > max_queued_bytes; }
  void update_room_locked();

  std::mutex m_mutex;
  std::atomic<std::size_t> m_bytes{0};  // written with m_mutex held
  bool m_stopped = false;               // guarded by m_mutex
  // Readable while there is room: waiters poll it, with their cancel_fd.
  wake_pipe m_room;
  bool m_room_signalled = false;  // guarded by m_mutex
};

}  // namespace interp_rpc::kernel
