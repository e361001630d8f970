#include "kernel/wake_pipe.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace interp_rpc::kernel {

wake_pipe::wake_pipe() {
  int fds[2];
  if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
    throw std::system_error(errno, std::generic_category(), "pipe2");
  }
  m_read = fds[0];
  m_write = fds[1];
}

wake_pipe::~wake_pipe() {
  close(m_read);
  close(m_write);
}

void wake_pipe::notify() noexcept {
  const char byte = 1;
  // EAGAIN: the pipe is full, so a wake is pending anyway.
  while (write(m_write, &byte, 1) < 0 && errno == EINTR) {
  }
}

void wake_pipe::drain() noexcept {
  char bytes[64];
  while (true) {
    const ssize_t got = read(m_read, bytes, sizeof bytes);
    if (got > 0 || (got < 0 && errno == EINTR)) {
      continue;
    }
    return;  // empty (EAGAIN) or closed
  }
}

}  // namespace interp_rpc::kernel
