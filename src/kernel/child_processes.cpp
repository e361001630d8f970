#include "kernel/child_processes.hpp"

#include <dirent.h>
#include <sys/types.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <memory>
#include <string>

namespace interp_rpc::kernel {

namespace {

// The process group of process `pid`, from /proc/<pid>/stat; -1 if it has
// gone. The name in parentheses may hold spaces and parentheses: the fields
// that follow start after the last ')'.
pid_t process_group_of(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) {
    return -1;
  }
  const std::size_t name_end = line.rfind(')');
  if (name_end == std::string::npos) {
    return -1;
  }
  // ") state ppid pgrp ..."
  char state = 0;
  long parent = 0;
  long group = 0;
  if (std::sscanf(line.c_str() + name_end + 1, " %c %ld %ld", &state, &parent, &group) != 3) {
    return -1;
  }
  return static_cast<pid_t>(group);
}

// The name of a /proc entry as a process id, or 0 if it is not one.
pid_t as_pid(const char* name) {
  char* end = nullptr;
  const long value = std::strtol(name, &end, 10);
  return end != name && *end == '\0' && value > 0 ? static_cast<pid_t>(value) : 0;
}

}  // namespace

int interrupt_child_processes() noexcept {
  const pid_t self = getpid();
  if (getpgid(0) != self) {
    return 0;
  }
  const std::unique_ptr<DIR, int (*)(DIR*)> proc(opendir("/proc"), closedir);
  if (!proc) {
    return 0;
  }
  int signalled = 0;
  try {
    while (const dirent* entry = readdir(proc.get())) {
      const pid_t pid = as_pid(entry->d_name);
      // A process that ended meanwhile is no error (ESRCH).
      if (pid != 0 && pid != self && process_group_of(pid) == self && kill(pid, SIGINT) == 0) {
        ++signalled;
      }
    }
  } catch (const std::exception&) {
    // Out of memory reading /proc: the processes signalled so far are all.
  }
  return signalled;
}

}  // namespace interp_rpc::kernel
