#include "kernel/usage_report.hpp"

#include <dirent.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace interp_rpc::kernel {

namespace {

// The fields of /proc/<pid>/stat after the command's name (which may hold
// spaces and parentheses, hence the last ')'); empty if the process is gone.
std::vector<std::string> stat_fields(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) {
    return {};
  }
  const std::size_t name_end = line.rfind(')');
  if (name_end == std::string::npos) {
    return {};
  }
  std::istringstream rest(line.substr(name_end + 1));
  std::vector<std::string> fields;
  for (std::string field; rest >> field;) {
    fields.push_back(field);
  }
  return fields;
}

// Indices into stat_fields(), which starts at the stat's third field (state).
constexpr std::size_t parent_field = 1;  // ppid
constexpr std::size_t user_time_field = 11;  // utime, in clock ticks
constexpr std::size_t system_time_field = 12;  // stime

// The kernel and every process descended from it.
std::vector<pid_t> kernel_processes() {
  std::multimap<pid_t, pid_t> children;  // parent -> child
  const std::unique_ptr<DIR, int (*)(DIR*)> proc(opendir("/proc"), closedir);
  if (proc) {
    while (const dirent* entry = readdir(proc.get())) {
      char* end = nullptr;
      const long pid = std::strtol(entry->d_name, &end, 10);
      if (end == entry->d_name || *end != '\0') {
        continue;
      }
      const std::vector<std::string> fields = stat_fields(static_cast<pid_t>(pid));
      if (fields.size() > parent_field) {
        children.emplace(static_cast<pid_t>(std::stol(fields[parent_field])),
                         static_cast<pid_t>(pid));
      }
    }
  }
  std::vector<pid_t> found{getpid()};
  for (std::size_t next = 0; next < found.size(); ++next) {
    const auto [first, last] = children.equal_range(found[next]);
    for (auto child = first; child != last; ++child) {
      found.push_back(child->second);
    }
  }
  return found;
}

// User and system CPU seconds of a process; negative if it is gone.
double cpu_seconds(pid_t pid) {
  const std::vector<std::string> fields = stat_fields(pid);
  if (fields.size() <= system_time_field) {
    return -1;
  }
  const double ticks = std::stod(fields[user_time_field]) + std::stod(fields[system_time_field]);
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// A "Name:   123 kB" line's value in bytes, from a /proc file; -1 if absent.
long long kilobytes_field(const std::string& path, const std::string& name) {
  std::ifstream file(path);
  for (std::string line; std::getline(file, line);) {
    if (line.starts_with(name) && line.size() > name.size() && line[name.size()] == ':') {
      return std::stoll(line.substr(name.size() + 1)) * 1024;
    }
  }
  return -1;
}

// As psutil's memory_full_info().pss, else its memory_info().rss.
long long memory_bytes(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid);
  const long long pss = kilobytes_field(dir + "/smaps_rollup", "Pss");
  if (pss >= 0) {
    return pss;
  }
  const long long rss = kilobytes_field(dir + "/status", "VmRSS");
  return rss >= 0 ? rss : 0;
}

// As psutil.cpu_times() sums them: guest time is already in user and nice,
// and idle and iowait are not busy.
struct cpu_line {
  double busy = 0;
  double total = 0;
};
cpu_line host_cpu() {
  std::ifstream stat("/proc/stat");
  std::string label;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0,
         guest = 0, guest_nice = 0;
  stat >> label >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal >> guest >>
      guest_nice;
  const double total =
      (user - guest) + (nice - guest_nice) + system + idle + iowait + irq + softirq + steal;
  return {total - idle - iowait, total};
}

double rounded_to_tenth(double value) { return std::round(value * 10) / 10; }

// psutil.virtual_memory() on Linux, from /proc/meminfo.
nlohmann::json virtual_memory() {
  const auto field = [](const char* name) {
    const long long value = kilobytes_field("/proc/meminfo", name);
    return value >= 0 ? value : 0;
  };
  const long long total = field("MemTotal");
  const long long free = field("MemFree");
  const long long buffers = field("Buffers");
  const long long cached = field("Cached") + field("SReclaimable");
  const long long available = field("MemAvailable");
  long long used = total - free - cached - buffers;
  if (used < 0) {
    used = total - free;
  }
  const double percent =
      total > 0 ? rounded_to_tenth(100.0 * static_cast<double>(total - available) /
                                   static_cast<double>(total))
                : 0.0;
  return {{"total", total},       {"available", available},
          {"percent", percent},   {"used", used},
          {"free", free},         {"active", field("Active")},
          {"inactive", field("Inactive")}, {"buffers", buffers},
          {"cached", cached},     {"shared", field("Shmem")},
          {"slab", field("Slab")}};
}

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

}  // namespace

usage_report::usage_report() {
  const cpu_line now = host_cpu();
  m_host = {now.busy, now.total};
}

nlohmann::json usage_report::measure() {
  std::lock_guard lock(m_mutex);
  const auto now = std::chrono::steady_clock::now();
  double kernel_cpu = 0;
  long long kernel_memory = 0;
  std::map<pid_t, process_sample> seen;
  for (const pid_t pid : kernel_processes()) {
    const double cpu = cpu_seconds(pid);
    if (cpu < 0) {
      continue;  // ended meanwhile
    }
    kernel_memory += memory_bytes(pid);
    const auto previous = m_processes.find(pid);
    if (previous != m_processes.end()) {
      const double wall = std::chrono::duration<double>(now - previous->second.at).count();
      if (wall > 0) {
        kernel_cpu += rounded_to_tenth(100.0 * (cpu - previous->second.cpu_seconds) / wall);
      }
    }
    seen[pid] = {cpu, now};
  }
  m_processes = std::move(seen);

  nlohmann::json reply = {{"status", "ok"},
                          {"hostname", host_name()},
                          {"pid", getpid()},
                          {"kernel_cpu", kernel_cpu},
                          {"kernel_memory", kernel_memory}};
  const cpu_line host = host_cpu();
  const double total = host.total - m_host.total;
  const double host_percent =
      total > 0 ? rounded_to_tenth(100.0 * (host.busy - m_host.busy) / total) : 0.0;
  m_host = {host.busy, host.total};
  if (host_percent != 0.0) {
    reply["host_cpu_percent"] = host_percent;
  }
  reply["cpu_count"] = sysconf(_SC_NPROCESSORS_ONLN);
  reply["host_virtual_memory"] = virtual_memory();
  return reply;
}

}  // namespace interp_rpc::kernel
