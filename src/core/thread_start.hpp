// Starting one of the engine's threads, which can fail: pthread_create gives
// EAGAIN when the process is at its limit on threads (a pids cgroup limit,
// `ulimit -u`) or cannot map another stack. The error then says which thread
// could not start, errno and which limits to look at.
#pragma once

#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

namespace interp_rpc::core {

class thread_start_error : public std::runtime_error {
 public:
  // `thread` names what could not start ("worker 2's thread").
  thread_start_error(std::string thread, int error_number);
  const std::string& thread() const noexcept { return m_thread; }
  int error_number() const noexcept { return m_errno; }

 private:
  std::string m_thread;
  int m_errno;
};

// std::thread(f, args...), throwing thread_start_error(thread, errno) if the
// thread cannot start. Nothing runs then: f and args were not invoked.
template <class F, class... Args>
std::thread start_thread(const std::string& thread, F&& f, Args&&... args) {
  try {
    return std::thread(std::forward<F>(f), std::forward<Args>(args)...);
  } catch (const std::system_error& e) {
    throw thread_start_error(thread, e.code().value());
  }
}

}  // namespace interp_rpc::core
