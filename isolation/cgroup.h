// SPDX-License-Identifier: BSD-3-Clause
// cgroup: one cgroup per jail — v1 hybrid (memory, pids, cpu, cpuacct, freezer + unified/) or v2.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace cellgate::isolation {

enum class CgroupLayout { kV1Hybrid, kV2 };

struct CgroupLimits {
  uint64_t memory = 0;  // bytes
  uint64_t pids = 0;
  double cpu = 0;       // cores
};

// The directories of one jail's cgroup. Pure data, built by plan_cgroup_paths().
struct CgroupPaths {
  CgroupLayout layout = CgroupLayout::kV2;
  std::vector<std::string> dirs;  // every dir to create and to write the pid into, parents first
  std::string unified;            // v2 dir (cgroup.kill, cgroup.freeze, memory.events on v2)
  std::string memory, pids, cpu;  // where the limit files live (v1: per controller; v2: = unified)
};

// Detects the layout under `base` (statfs: cgroup2 at base = pure v2, else v1 hybrid).
CgroupLayout detect_cgroup_layout(const std::string& base);
// v1 controllers present under base: "memory", "pids", "cpu", "cpuacct", "freezer" directories
// that are cgroup mounts; `unified` = base/unified is a cgroup2 mount. Pure given its inputs.
CgroupPaths plan_cgroup_paths(CgroupLayout layout, const std::string& base, const std::string& name,
                              const std::vector<std::string>& v1_controllers, bool has_unified);
// "memory limit 512 MiB exceeded" style sizes: whole GiB, else MiB, else bytes.
std::string human_bytes(uint64_t bytes);
// cpu.max / cfs quota in microseconds per 100 ms period.
uint64_t cpu_quota_us(double cores);

class Cgroup {
 public:
  // Creates the dirs (replacing an empty stale dir of the same name) and writes the limits.
  static common::Result<Cgroup> create(const std::string& base, const std::string& name,
                                       const CgroupLimits& limits);
  // Moves pid into every dir (between clone and the child's release); skip_unified when
  // clone3(CLONE_INTO_CGROUP) already started it in the v2 dir.
  common::Status place(pid_t pid, bool skip_unified) const;
  // cgroup.kill on the v2 dir; false if unsupported (the caller then SIGKILLs init).
  bool kill_all() const;
  // "memory limit … exceeded", "pids limit … reached" or "" from the event counters.
  std::string exit_reason() const;
  // rmdir every dir, children first, retrying briefly while the kernel drains them.
  void remove() const;
  const CgroupPaths& paths() const { return paths_; }

 private:
  CgroupPaths paths_;
  CgroupLimits limits_;
};

}  // namespace cellgate::isolation
