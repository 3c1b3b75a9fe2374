// SPDX-License-Identifier: BSD-3-Clause
// process_figures: this process's CPU, memory and descriptors, for the standard process_* metrics.
#pragma once

#include <cstdint>
#include <optional>

namespace cellgate::metrics {

struct ProcessFigures {
  double cpu_seconds = 0;          // user + system
  uint64_t resident_bytes = 0;
  uint64_t virtual_bytes = 0;
  uint64_t open_fds = 0;
  uint64_t max_fds = 0;            // RLIMIT_NOFILE soft
  double start_time_seconds = 0;   // since the Unix epoch
};

// Read from /proc/self (stat, statm, fd) and /proc/stat (btime). nullopt when /proc is not
// mounted. Thread-safe; costs one directory walk of /proc/self/fd.
std::optional<ProcessFigures> read_process_figures();

}  // namespace cellgate::metrics
