#include "kernel/iopub_backlog.hpp"

#include <poll.h>

#include <cerrno>

#include <Python.h>

namespace interp_rpc::kernel {

namespace {

// Releases the GIL for its lifetime if the calling thread holds it.
class gil_release_if_held {
 public:
  gil_release_if_held() : p_state(PyGILState_Check() != 0 ? PyEval_SaveThread() : nullptr) {}
  ~gil_release_if_held() {
    if (p_state != nullptr) {
      PyEval_RestoreThread(p_state);
    }
  }
  gil_release_if_held(const gil_release_if_held&) = delete;
  gil_release_if_held& operator=(const gil_release_if_held&) = delete;

 private:
  PyThreadState* p_state;
};

bool readable(const pollfd& item) { return (item.revents & (POLLIN | POLLHUP | POLLERR)) != 0; }

}  // namespace

iopub_backlog& iopub_backlog::shared() {
  static iopub_backlog backlog;
  return backlog;
}

void iopub_backlog::queued(std::size_t bytes) {
  std::lock_guard lock(m_mutex);
  m_bytes.store(m_bytes.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
  update_room_locked();
}

void iopub_backlog::sent(std::size_t bytes) {
  std::lock_guard lock(m_mutex);
  const std::size_t now = m_bytes.load(std::memory_order_relaxed);
  m_bytes.store(now > bytes ? now - bytes : 0, std::memory_order_relaxed);
  update_room_locked();
}

void iopub_backlog::stop() {
  std::lock_guard lock(m_mutex);
  m_stopped = true;
  update_room_locked();
}

void iopub_backlog::update_room_locked() {
  // The pipe is level-triggered: readable exactly while there is room.
  const bool room = !full_locked();
  if (room && !m_room_signalled) {
    m_room.notify();
  } else if (!room && m_room_signalled) {
    m_room.drain();
  }
  m_room_signalled = room;
}

bool iopub_backlog::wait_for_room(int cancel_fd) {
  if (has_room()) {
    return true;  // the common case: no lock, no system call
  }
  const gil_release_if_held released;
  pollfd items[] = {{m_room.fd(), POLLIN, 0}, {cancel_fd, POLLIN, 0}};
  const nfds_t count = cancel_fd >= 0 ? 2 : 1;
  while (true) {
    {
      std::lock_guard lock(m_mutex);
      if (!full_locked()) {
        return true;
      }
    }
    if (::poll(items, count, -1) < 0 && errno != EINTR) {
      return true;  // cannot wait: publish on rather than hang
    }
    if (count == 2 && readable(items[1])) {
      return false;
    }
  }
}

}  // namespace interp_rpc::kernel
