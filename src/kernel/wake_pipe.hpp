// A pipe that one thread writes to wake another out of a poll: zmq_poll
// watches plain file descriptors next to zmq sockets.
#pragma once

namespace interp_rpc::kernel {

class wake_pipe {
 public:
  wake_pipe();
  ~wake_pipe();
  wake_pipe(const wake_pipe&) = delete;
  wake_pipe& operator=(const wake_pipe&) = delete;

  // Any thread. Wakes pile up into one.
  void notify() noexcept;
  // Consumes the wakes so far; the descriptor is no longer readable.
  void drain() noexcept;
  // Readable while a wake is pending.
  int fd() const noexcept { return m_read; }

 private:
  int m_read = -1;
  int m_write = -1;
};

}  // namespace interp_rpc::kernel
