// SPDX-License-Identifier: BSD-3-Clause
// cgroup: one cgroup per jail — v1 hybrid (memory, pids, cpu, cpuacct, freezer + unified/) or v2 —
// at <ctl>/cellgate/<name>, or at <ctl>/cellgate/<owner>/<name> when the jail has an owner level:
// siblings share the CPU by weight, so every owner gets one share however many jails it runs.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "isolation/cgroup_paths.h"

namespace cellgate::isolation {

// Which freezer pauses a jail: v2 cgroup.freeze (also the unified/ dir of a hybrid host), v1
// freezer.state, or kAuto: v2 when the jail has a v2 dir, else v1.
enum class FreezerKind { kAuto, kV2, kV1 };

// Detects the layout under `base` (statfs: cgroup2 at base = pure v2, else v1 hybrid).
CgroupLayout detect_cgroup_layout(const std::string& base);

struct CgroupLimits {
  uint64_t memory = 0;  // bytes
  uint64_t pids = 0;
  double cpu = 0;       // cores
};

class Cgroup {
 public:
  // Creates the dirs (replacing an empty stale dir of the same name) and writes the limits.
  // The shared levels above it are made when missing (and the top's weight written when given).
  static common::Result<Cgroup> create(const std::string& base, const std::string& name,
                                       const CgroupLimits& limits, const CgroupPlacement& where = {});
  // The cgroup of a running jail, from the unified dir its status file names:
  // <base>/cellgate/[<owner>/]<leaf> (v2) or <base>/unified/cellgate/[<owner>/]<leaf> (v1 hybrid).
  // Creates nothing.
  static common::Result<Cgroup> attach(const std::string& unified_dir);
  // After the jail's helper is gone: removes the dirs it left (a helper killed by SIGKILL cannot
  // remove its own), thawing and killing any task still in them first, then its owner's dirs when
  // no other jail is in them. Never blocks: false while
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
  // rmdir every dir, children first, retrying briefly while the kernel drains them; then the
  // owner's dirs, if this was its last jail.
  void remove() const;
  const CgroupPaths& paths() const { return paths_; }

 private:
  static common::Result<Cgroup> parse(const std::string& unified_dir);

  CgroupPaths paths_;
  CgroupLimits limits_;
};

}  // namespace cellgate::isolation
