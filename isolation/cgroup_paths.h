// SPDX-License-Identifier: BSD-3-Clause
// cgroup_paths: where one jail's cgroup dirs go (pure): <ctl>/cellgate/[<owner>/]<name> on a v1
// hybrid host (one tree per controller, plus unified/) or on v2, and how names and sizes are written.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cellgate::isolation {

enum class CgroupLayout { kV1Hybrid, kV2 };
// Where a jail's cgroup sits above its own dir, and what the shared levels weigh.
struct CgroupPlacement {
  std::string owner;        // "" = <ctl>/cellgate/<name>; else <ctl>/cellgate/<owner>/<name> (valid_owner)
  uint32_t top_weight = 0;  // cpu.weight (1..10000, v2 units) of <ctl>/cellgate itself; 0 = leave it
};

// The directories of one jail's cgroup. Pure data, built by plan_cgroup_paths().
struct CgroupPaths {
  CgroupLayout layout = CgroupLayout::kV2;
  std::vector<std::string> tops;    // <ctl>/cellgate per hierarchy: shared by every jail, never removed
  std::vector<std::string> owners;  // <ctl>/cellgate/<owner> per hierarchy ("" owner: none): shared by
                                    // the owner's jails, removed (when empty) after the last one's
  std::vector<std::string> dirs;    // the jail's own dirs, one per hierarchy: created, the pid written
                                    // into each, removed with the jail
  std::string unified;            // v2 dir (cgroup.kill, cgroup.freeze, memory.events on v2)
  std::string memory, pids, cpu;  // where the limit files live (v1: per controller; v2: = unified)
  std::string freezer;            // v1 freezer dir ("" on v2 or without the v1 freezer)
};

// v1 controllers present under base: "memory", "pids", "cpu", "cpuacct", "freezer" directories
// that are cgroup mounts; `unified` = base/unified is a cgroup2 mount. Pure given its inputs.
CgroupPaths plan_cgroup_paths(CgroupLayout layout, const std::string& base, const std::string& name,
                              const std::vector<std::string>& v1_controllers, bool has_unified,
                              const std::string& owner = "");
// An owner level's dir name: [a-zA-Z0-9_-]{1,200}, and not "cellgate" (a jail dir's path must say
// which level is which).
bool valid_owner(std::string_view owner);
// A user's owner dir name, one per user name ([A-Za-z0-9._-]{1,64}, or anything): "u-" and the name
// with '_' written "__" and any other byte outside [A-Za-z0-9-] as "_XX" (hex): distinct names get
// distinct dirs, and none of them is "pool" or another fixed name without the "u-". A name whose
// dir would be longer than 200 bytes gets "h-" and a 64-bit hash of it instead.
std::string user_cgroup_owner(std::string_view user);
// cpu.weight (v2, 1..10000, default 100) as v1 cpu.shares (2..262144, default 1024).
uint64_t cpu_shares_for_weight(uint32_t weight);
// "memory limit 512 MiB exceeded" style sizes: whole GiB, else MiB, else bytes.
std::string human_bytes(uint64_t bytes);
// What a jail's socket buffers may hold on a v1 host (memory.kmem.tcp.limit_in_bytes), on top of
// its memory limit: a quarter of it, at least 16 MiB.
uint64_t socket_memory_limit(uint64_t memory);
// cpu.max / cfs quota in microseconds per 100 ms period.
uint64_t cpu_quota_us(double cores);

}  // namespace cellgate::isolation
