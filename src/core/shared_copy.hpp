// A large copy that a second thread may share.
//
// A caller reading a large result copies it out of the worker's memory while
// the worker that made it, often with nothing else to do, sits idle on the
// other core. One thread's memcpy does not fill this machine's memory
// bandwidth: on the 2-core VMs we measured, 16 MiB copied in 1.4 ms by one
// thread and in 0.7 ms by two. So the worker stands by after such a reply,
// and the caller's copy hands it a share: the copy is cut into chunks, and
// each thread takes the next chunk until none is left.
//
// The helper is never needed. A copy starts at once and finishes with or
// without it; a helper that arrives late takes what is left; one that stopped
// standing by (the caller took too long, the worker has a call to run) is
// simply not there.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

namespace interp_rpc::core {

// Copies smaller than this are not shared: handing a share over costs more
// than it saves.
inline constexpr std::size_t shared_copy_threshold = 2u << 20;

class shared_copy {
 public:
  // Copying thread: copies `n` bytes from `src` to `dst`, sharing the chunks
  // with a helper that stands by. Returns once every byte is copied, the
  // helper's share too. One copy at a time.
  void copy(char* dst, const char* src, std::size_t n);

  // Copying thread: no further copy will come. A helper standing by leaves.
  void finish();

  // Helper thread: helps with each copy that starts until finish(), until
  // `deadline_ns` (now_ns()'s clock) passes, or until `leave()` is true
  // (checked as it spins, then every `poll_ns`). It spins for the first
  // `spin_ns` of the wait, then sleeps. Returns whether it copied a chunk.
  bool stand_by(std::int64_t deadline_ns, const std::function<bool()>& leave,
                std::int64_t poll_ns, std::int64_t spin_ns);

 private:
  // One copy: its chunks go to whichever thread takes them first.
  struct job {
    char* dst = nullptr;
    const char* src = nullptr;
    std::size_t size = 0;
    std::atomic<std::size_t> next{0};  // the first byte no thread has taken yet
    std::atomic<std::size_t> done{0};  // bytes copied, by either thread
  };
  // Copies chunks of `j` until none is left; whether it took any.
  static bool take_chunks(job& j) noexcept;

  std::mutex m_mutex;
  std::condition_variable m_changed;
  std::shared_ptr<job> m_job;  // the latest copy started
  std::uint64_t m_started = 0;  // copies started so far
  bool m_finished = false;
  // Copies started plus finish() calls, readable without the mutex: what a
  // helper's spin waits for.
  std::atomic<std::uint64_t> m_events{0};
};

}  // namespace interp_rpc::core
