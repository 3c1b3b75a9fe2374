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
// Which freezer pauses a jail: v2 cgroup.freeze (also the unified/ dir of a hybrid host), v1
// freezer.state, or kAuto: v2 when the jail has a v2 dir, else v1.
enum class FreezerKind { kAuto, kV2, kV1 };

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
  std::string freezer;            // v1 freezer dir ("" on v2 or without the v1 freezer)
};

// Detects the layout under `base` (statfs: cgroup2 at base = pure v2, else v1 hybrid).
CgroupLayout detect_cgroup_layout(const std::string& base);
// v1 controllers present under base: "memory", "pids", "cpu", "cpuacct", "freezer" directories
// that are cgroup mounts; `unified` = base/unified is a cgroup2 mount. Pure given its inputs.
CgroupPaths plan_cgroup_paths(CgroupLayout layout, const std::string& base, const std::string& name,
                              const std::vector<std::string>& v1_controllers, bool has_unified);
// "memory limit 512 MiB exceeded" style sizes: whole GiB, else MiB, else bytes.
std::string human_bytes(uint64_t bytes);
// What a jail's socket buffers may hold on a v1 host (memory.kmem.tcp.limit_in_bytes), on top of
// its memory limit: a quarter of it, at least 16 MiB.
uint64_t socket_memory_limit(uint64_t memory);
// cpu.max / cfs quota in microseconds per 100 ms period.
uint64_t cpu_quota_us(double cores);

class Cgroup {
 public:
  // Creates the dirs (replacing an empty stale dir of the same name) and writes the limits.
  static common::Result<Cgroup> create(const std::string& base, const std::string& name,
                                       const CgroupLimits& limits);
  // The cgroup of a running jail, from the unified dir its status file names:
  // <base>/cellgate/<leaf> (v2) or <base>/unified/cellgate/<leaf> (v1 hybrid). Creates nothing.
  static common::Result<Cgroup> attach(const std::string& unified_dir);
  // After the jail's helper is gone: removes the dirs it left (a helper killed by SIGKILL cannot
  // remove its own), thawing and killing any task still in them first. Never blocks: false while
  // tasks are still leaving (the caller asks again later), true once nothing is left to remove.
  static bool release(const std::string& unified_dir);
  // True when pid is listed in the cgroup.procs of every leaf dir (host pid namespace).
  bool holds(pid_t pid) const;
  // Moves pid into every dir (between clone and the child's release); skip_unified when
  // clone3(CLONE_INTO_CGROUP) already started it in the v2 dir.
  common::Status place(pid_t pid, bool skip_unified) const;
  // cgroup.kill on the v2 dir; false if unsupported (the caller then SIGKILLs init).
  bool kill_all() const;
  // Freezes every task of the jail (they cannot undo it: unlike SIGSTOP, SIGCONT does not thaw a
  // cgroup) or thaws it. Thawing writes every freezer the jail has, whichever one froze it.
  common::Status set_frozen(bool frozen, FreezerKind kind) const;
  // Rewrites the non-zero limits (a pooled kernel claimed by a user with limits of their own).
  common::Status set_limits(const CgroupLimits& limits);
  // Memory charged to the jail now (memory.current / memory.usage_in_bytes); 0 when unknown.
  uint64_t memory_usage() const;
  // CPU time the jail's tasks used (cpu.stat usage_usec / cpuacct.usage), in seconds; 0 when unknown.
  double cpu_seconds() const;
  // "memory limit … exceeded", "pids limit … reached" or "" from the event counters.
  std::string exit_reason() const;
  // rmdir every dir, children first, retrying briefly while the kernel drains them.
  void remove() const;
  const CgroupPaths& paths() const { return paths_; }

 private:
  static common::Result<Cgroup> parse(const std::string& unified_dir);

  CgroupPaths paths_;
  CgroupLimits limits_;
};

}  // namespace cellgate::isolation
