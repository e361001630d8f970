#include "core/thread_start.hpp"

#include <cerrno>
#include <cstring>

namespace interp_rpc::core {

namespace {

std::string describe(const std::string& thread, int error_number) {
  const char* name = strerrorname_np(error_number);
  std::string text = "could not start " + thread + ": " + std::strerror(error_number) +
                     " (errno " + std::to_string(error_number) +
                     (name != nullptr ? std::string(", ") + name : std::string()) + ")";
  if (error_number == EAGAIN) {
    text +=
        ". The process is probably at a limit on threads: the pids limit of its cgroup "
        "(pids.max: a container's --pids-limit, systemd's TasksMax) or the user's process "
        "limit (ulimit -u), or it could not map another thread stack (ulimit -v). Raise the "
        "limit, or start fewer workers.";
  }
  return text;
}

}  // namespace

thread_start_error::thread_start_error(std::string thread, int error_number)
    : std::runtime_error(describe(thread, error_number)),
      m_thread(std::move(thread)),
      m_errno(error_number) {}

}  // namespace interp_rpc::core
