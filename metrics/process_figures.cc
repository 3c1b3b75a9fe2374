// SPDX-License-Identifier: BSD-3-Clause
// process_figures: this process's CPU, memory and descriptors, for the standard process_* metrics.
#include "metrics/process_figures.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace cellgate::metrics {
namespace {

std::optional<std::string> slurp(const char* path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

uint64_t count_fds() {
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) return 0;
  uint64_t n = 0;
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n > 0 ? n - 1 : 0;  // the walk's own descriptor
}

}  // namespace

std::optional<ProcessFigures> read_process_figures() {
  auto stat = slurp("/proc/self/stat");
  auto statm = slurp("/proc/self/statm");
  if (!stat || !statm) return std::nullopt;
  // proc(5): the command name (field 2) is in parentheses and may hold spaces; count from the ')'.
  const auto close = stat->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(stat->substr(close + 2));
  std::string f;
  unsigned long long utime = 0, stime = 0, starttime = 0;
  for (int i = 3; fields >> f; ++i) {
    if (i == 14) utime = std::stoull(f);
    else if (i == 15) stime = std::stoull(f);
    else if (i == 22) { starttime = std::stoull(f); break; }
  }
  const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  ProcessFigures p;
  p.cpu_seconds = static_cast<double>(utime + stime) / tick;
  unsigned long long size = 0, resident = 0;
  std::istringstream(*statm) >> size >> resident;
  p.virtual_bytes = size * page;
  p.resident_bytes = resident * page;
  p.open_fds = count_fds();
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0) p.max_fds = rl.rlim_cur;
  if (auto st = slurp("/proc/stat")) {
    const auto at = st->find("\nbtime ");
    if (at != std::string::npos) {
      const double btime = std::strtod(st->c_str() + at + 7, nullptr);
      p.start_time_seconds = btime + static_cast<double>(starttime) / tick;
    }
  }
  return p;
}

}  // namespace cellgate::metrics
