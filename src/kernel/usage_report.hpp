// The answer to a usage_request, JupyterLab's resource indicator (and
// jupyter-resource-usage): what ipykernel 7.2 reports with psutil, read here
// from /proc the way psutil reads it.
//
// - hostname, pid;
// - kernel_cpu: the CPU percent of the kernel and every process descended
//   from it, each since the previous request (0 for a process seen the
//   first time, as psutil's first cpu_percent() of a process); one busy
//   core is 100;
// - kernel_memory: their proportional set size (PSS) in bytes, or the
//   resident set where the kernel gives no PSS;
// - host_cpu_percent: the host's busy share since the previous request (the
//   first since the kernel started), left out when 0.0 as ipykernel leaves
//   it out;
// - cpu_count: the logical CPUs online;
// - host_virtual_memory: psutil's virtual_memory() fields, from
//   /proc/meminfo, in bytes.
#pragma once

#include <chrono>
#include <map>
#include <mutex>

#include <nlohmann/json.hpp>
#include <sys/types.h>

namespace interp_rpc::kernel {

class usage_report {
 public:
  usage_report();

  // Any thread. The reply's content, with "status": "ok".
  nlohmann::json measure();

 private:
  struct host_times {
    double busy = 0;
    double total = 0;
  };
  struct process_sample {
    double cpu_seconds = 0;
    std::chrono::steady_clock::time_point at;
  };

  std::mutex m_mutex;
  host_times m_host;  // at the previous request
  std::map<pid_t, process_sample> m_processes;  // at the previous request
};

}  // namespace interp_rpc::kernel
