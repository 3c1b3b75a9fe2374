// SPDX-License-Identifier: BSD-3-Clause
// cgroup: one cgroup per jail — v1 hybrid (memory, pids, cpu, cpuacct, freezer + unified/) or v2 —
// under a top level shared by every jail and an owner level shared by one owner's jails.
#include "isolation/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ctime>

#include "common/unique_fd.h"

namespace cellgate::isolation {
namespace {

using common::Errc;
using common::make_error;

constexpr uint64_t kCpuPeriodUs = 100000;

bool is_fs(const std::string& path, int64_t magic) {
  struct statfs st {};
  return ::statfs(path.c_str(), &st) == 0 && static_cast<int64_t>(st.f_type) == magic;
}

int write_file(const std::string& path, const std::string& value) {
  common::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return errno;
  ssize_t n = ::write(fd.get(), value.data(), value.size());
  if (n < 0) return errno;
  return static_cast<size_t>(n) == value.size() ? 0 : EIO;
}

std::string read_file(const std::string& path) {
  common::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return {};
  char buf[4096];
  ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// Value of "key N" lines (memory.events, memory.oom_control, pids.events).
uint64_t counter(const std::string& text, const std::string& key) {
  size_t pos = 0;
  while ((pos = text.find(key + " ", pos)) != std::string::npos) {
    if (pos == 0 || text[pos - 1] == '\n') return std::strtoull(text.c_str() + pos + key.size() + 1, nullptr, 10);
    pos += key.size();
  }
  return 0;
}

void sleep_ms(long ms) {
  timespec ts{0, ms * 1000000L};
  ::nanosleep(&ts, nullptr);
}

common::Error fail(const std::string& what, int err) {
  return make_error(Errc::kInternal, what + ": " + std::strerror(err), err);
}

}  // namespace

CgroupLayout detect_cgroup_layout(const std::string& base) {
  return is_fs(base, CGROUP2_SUPER_MAGIC) ? CgroupLayout::kV2 : CgroupLayout::kV1Hybrid;
}

namespace {

// v1 controllers that are mounted under base, one per hierarchy ("cpu" and "cpuacct" are often
// the same "cpu,cpuacct" hierarchy behind two symlinks).
std::vector<std::string> v1_controllers(const std::string& base) {
  std::vector<std::string> controllers, seen;
  for (const char* ctl : {"memory", "pids", "cpu", "cpuacct", "freezer"}) {
    std::string dir = base + "/" + ctl;
    char real[4096];
    if (!is_fs(dir, CGROUP_SUPER_MAGIC) || ::realpath(dir.c_str(), real) == nullptr) continue;
    if (std::find(seen.begin(), seen.end(), real) != seen.end()) continue;
    seen.emplace_back(real);
    controllers.emplace_back(ctl);
  }
  return controllers;
}

// Controllers must be enabled in every ancestor's subtree_control (cgroup-v2.rst "Enabling and
// Disabling"); base, the top and the owner level must therefore hold no processes themselves. The
// jail dir stays a leaf. cpu may be unavailable (realtime tasks in the parent): the jail then runs
// without a CPU quota.
common::Status enable_v2_controllers(const std::string& base, CgroupPaths& p) {
  std::vector<std::string> parents = {base};
  parents.insert(parents.end(), p.tops.begin(), p.tops.end());
  parents.insert(parents.end(), p.owners.begin(), p.owners.end());
  for (const std::string& dir : parents) {
    if (dir != base && ::mkdir(dir.c_str(), 0755) < 0 && errno != EEXIST) return fail("cgroup: mkdir " + dir, errno);
    for (const char* ctl : {"+memory", "+pids", "+cpu"}) {
      int err = write_file(dir + "/cgroup.subtree_control", ctl);
      if (err != 0 && std::string_view(ctl) == "+cpu") p.cpu.clear();
      else if (err != 0) return fail("cgroup: enable " + std::string(ctl + 1) + " in " + dir, err);
    }
  }
  return common::ok();
}

// Creates the dirs. A leaf left by a crashed jail of the same name is removed when empty; a busy
// one (the previous jail of a restarted kernel still shutting down) sets *busy, and the leaves
// created so far are removed again so the caller can retry under another name. *gone is set when an
// owner dir vanished between its mkdir and the leaf's (its last other jail removed it): the caller
// makes the parents again and retries.
common::Status make_dirs(const CgroupPaths& p, bool* busy, bool* gone) {
  *busy = *gone = false;
  for (const auto* level : {&p.tops, &p.owners}) {
    for (const auto& dir : *level) {
      if (::mkdir(dir.c_str(), 0755) < 0 && errno != EEXIST) return fail("cgroup: mkdir " + dir, errno);
    }
  }
  std::vector<std::string> created;
  for (const auto& dir : p.dirs) {
    if (::mkdir(dir.c_str(), 0755) == 0) {
      created.push_back(dir);
      continue;
    }
    int err = errno;
    if (err == EEXIST && ::rmdir(dir.c_str()) == 0 && ::mkdir(dir.c_str(), 0755) == 0) {
      created.push_back(dir);
      continue;
    }
    if (err == EEXIST) err = errno;
    for (const auto& c : created) ::rmdir(c.c_str());
    *busy = err == EBUSY;
    *gone = err == ENOENT;
    return fail(*busy ? "cgroup: " + dir + " exists and is busy" : "cgroup: mkdir " + dir, err);
  }
  return common::ok();
}

// The owner's dirs once its last jail is gone (EBUSY while another one is in them: left alone).
void remove_owner_dirs(const CgroupPaths& p) {
  for (const auto& dir : p.owners) ::rmdir(dir.c_str());
}

// The top's weight against its siblings (the gateway's own cgroup, the host's services).
common::Status write_top_weight(const CgroupPaths& p, uint32_t weight) {
  if (weight == 0 || p.cpu.empty()) return common::ok();
  const bool v2 = p.layout == CgroupLayout::kV2;
  std::string top = p.cpu.substr(0, p.cpu.rfind('/'));  // <cpu tree>/cellgate[/<owner>]
  if (!p.owners.empty()) top.resize(top.rfind('/'));
  const std::string file = top + (v2 ? "/cpu.weight" : "/cpu.shares");
  const std::string value = std::to_string(v2 ? weight : cpu_shares_for_weight(weight));
  if (int err = write_file(file, value)) return fail("cgroup: write " + value + " to " + file, err);
  return common::ok();
}

common::Status write_limits(const CgroupPaths& p, const CgroupLimits& limits) {
  auto set = [](const std::string& path, const std::string& value, bool optional) -> common::Status {
    int err = write_file(path, value);
    if (err == 0 || (optional && err == ENOENT)) return common::ok();
    return fail("cgroup: write " + value + " to " + path, err);
  };
  const std::string mem = std::to_string(limits.memory), pids = std::to_string(limits.pids);
  const std::string quota = std::to_string(cpu_quota_us(limits.cpu)), period = std::to_string(kCpuPeriodUs);
  common::Status s = common::ok();
  if (p.layout == CgroupLayout::kV2) {
    if (s) s = set(p.memory + "/memory.max", mem, false);
    if (s) s = set(p.memory + "/memory.swap.max", "0", true);   // absent without swap accounting
    if (s) s = set(p.memory + "/memory.oom.group", "1", false);  // OOM kills the whole jail
    if (s) s = set(p.pids + "/pids.max", pids, false);
    if (s && !p.cpu.empty()) s = set(p.cpu + "/cpu.max", quota + " " + period, false);
  } else {
    if (s) s = set(p.memory + "/memory.limit_in_bytes", mem, false);
    if (s) s = set(p.memory + "/memory.memsw.limit_in_bytes", mem, true);  // = limit: no swap
    // v1 charges no socket buffer to memory.usage: without this, TCP and UDP buffers (even over the
    // jail's own loopback) are host memory outside every limit, up to the host-wide net.ipv4.tcp_mem,
    // whose exhaustion stalls every socket on the host. Writing a limit turns on v1's separate socket
    // counter (memory.kmem.tcp.*, cgroup-v1/memory.rst 2.7.1); v2 charges them to memory.current.
    if (s) s = set(p.memory + "/memory.kmem.tcp.limit_in_bytes", std::to_string(socket_memory_limit(limits.memory)), true);
    if (s) s = set(p.pids + "/pids.max", pids, false);
    if (s && !p.cpu.empty()) s = set(p.cpu + "/cpu.cfs_period_us", period, false);
    if (s && !p.cpu.empty()) s = set(p.cpu + "/cpu.cfs_quota_us", quota, false);
  }
  return s;
}

}  // namespace

common::Result<Cgroup> Cgroup::create(const std::string& base, const std::string& name, const CgroupLimits& limits,
                                      const CgroupPlacement& where) {
  if (!where.owner.empty() && !valid_owner(where.owner))
    return make_error(Errc::kBadRequest, "cgroup: '" + where.owner + "' is not a cgroup owner name");
  CgroupLayout layout = detect_cgroup_layout(base);
  bool v1 = layout == CgroupLayout::kV1Hybrid;
  Cgroup cg;
  const std::vector<std::string> controllers = v1 ? v1_controllers(base) : std::vector<std::string>{};
  const bool unified = v1 && is_fs(base + "/unified", CGROUP2_SUPER_MAGIC);
  cg.limits_ = limits;
  std::string leaf = name;
  common::Status made = common::ok();
  // A few rounds: another jail of the owner may remove the owner's dirs between our mkdirs.
  for (int round = 0; round < 8; ++round) {
    cg.paths_ = plan_cgroup_paths(layout, base, leaf, controllers, unified, where.owner);
    if (v1 && (cg.paths_.memory.empty() || cg.paths_.pids.empty()))
      return make_error(Errc::kInternal, "cgroup: no v1 memory/pids hierarchy under " + base);
    bool busy = false, gone = false;
    made = v1 ? common::ok() : enable_v2_controllers(base, cg.paths_);
    if (!made) gone = made.error().sys_errno == ENOENT;  // the owner's dir went before its subtree_control
    else made = make_dirs(cg.paths_, &busy, &gone);
    if (made || (!busy && !gone)) break;
    // Same name still in use: this jail gets "<name>-<pid>" (the status file names the dir).
    if (busy) leaf = name + "-" + std::to_string(::getpid());
  }
  if (!made) return made.error();
  if (auto s = write_limits(cg.paths_, limits); !s) {
    cg.remove();
    return s.error();
  }
  if (auto s = write_top_weight(cg.paths_, where.top_weight); !s) {
    cg.remove();
    return s.error();
  }
  return cg;
}

common::Result<Cgroup> Cgroup::parse(const std::string& unified_dir) {
  auto refuse = [&] { return make_error(Errc::kBadRequest, "cgroup: '" + unified_dir + "' is not a jail cgroup dir"); };
  // .../cellgate/<leaf> or .../cellgate/<owner>/<leaf> (an owner is never named "cellgate").
  const size_t cut = unified_dir.rfind('/');
  if (unified_dir.empty() || unified_dir[0] != '/' || cut == 0 || cut == std::string::npos) return refuse();
  const std::string leaf = unified_dir.substr(cut + 1);
  std::string rest = unified_dir.substr(0, cut), owner;
  if (!rest.ends_with("/cellgate")) {
    const size_t up = rest.rfind('/');
    owner = rest.substr(up + 1);
    rest.resize(up);
    if (!valid_owner(owner) || !rest.ends_with("/cellgate")) return refuse();
  }
  std::string base = rest.substr(0, rest.size() - std::string_view("/cellgate").size());
  if (base.empty() || leaf.empty() || leaf.size() > 128 || leaf.find_first_not_of(
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != std::string::npos)
    return refuse();
  Cgroup cg;
  const std::string unified_suffix = "/unified";
  if (base.ends_with(unified_suffix) && base.size() > unified_suffix.size() &&
      detect_cgroup_layout(base.substr(0, base.size() - unified_suffix.size())) == CgroupLayout::kV1Hybrid) {
    base.resize(base.size() - unified_suffix.size());
    cg.paths_ = plan_cgroup_paths(CgroupLayout::kV1Hybrid, base, leaf, v1_controllers(base), true, owner);
  } else {
    cg.paths_ = plan_cgroup_paths(CgroupLayout::kV2, base, leaf, {}, false, owner);
  }
  return cg;
}

common::Result<Cgroup> Cgroup::attach(const std::string& unified_dir) {
  auto cg = parse(unified_dir);
  if (cg && !is_fs(unified_dir, CGROUP2_SUPER_MAGIC))
    return make_error(Errc::kNotFound, "cgroup: " + unified_dir + " is not a cgroup2 dir");
  return cg;
}

bool Cgroup::release(const std::string& unified_dir) {
  auto cg = parse(unified_dir);
  if (!cg) return true;  // not a jail's cgroup: nothing of ours to remove
  const auto& dirs = cg->paths_.dirs;
  if (std::none_of(dirs.begin(), dirs.end(), [&](const std::string& d) { return ::access(d.c_str(), F_OK) == 0; })) {
    remove_owner_dirs(cg->paths_);
    return true;
  }
  // A task frozen by the v1 freezer cannot even die (cgroup-v1/freezer-subsystem.rst): thaw first.
  (void)cg->set_frozen(false, FreezerKind::kAuto);
  (void)cg->kill_all();
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
    if (::rmdir(it->c_str()) == 0 || errno == ENOENT) continue;
    return errno != EBUSY;  // busy: its last tasks are still exiting; anything else will not change
  }
  remove_owner_dirs(cg->paths_);
  return true;
}

bool Cgroup::holds(pid_t pid) const {
  const std::string want = std::to_string(pid);
  for (const auto& dir : paths_.dirs) {
    // A jail's leaf lists at most its pids limit; 64 KiB of "N\n" lines is far more than that.
    common::UniqueFd fd(::open((dir + "/cgroup.procs").c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return false;
    std::string text;
    char buf[4096];
    ssize_t n;
    while (text.size() < 65536 && (n = ::read(fd.get(), buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
    bool found = false;
    size_t pos = 0;
    while (!found && pos < text.size()) {
      size_t nl = text.find('\n', pos);
      if (nl == std::string::npos) nl = text.size();
      found = text.compare(pos, nl - pos, want) == 0;
      pos = nl + 1;
    }
    if (!found) return false;
  }
  return true;
}

common::Status Cgroup::place(pid_t pid, bool skip_unified) const {
  const std::string text = std::to_string(pid);
  for (const auto& dir : paths_.dirs) {
    if (skip_unified && dir == paths_.unified) continue;
    if (int err = write_file(dir + "/cgroup.procs", text)) return fail("cgroup: place in " + dir, err);
  }
  return common::ok();
}

bool Cgroup::kill_all() const {
  return !paths_.unified.empty() && write_file(paths_.unified + "/cgroup.kill", "1") == 0;
}

common::Status Cgroup::set_frozen(bool frozen, FreezerKind kind) const {
  const bool v2 = !paths_.unified.empty(), v1 = !paths_.freezer.empty();
  if (!frozen) {
    int err = 0;
    if (v2) err = write_file(paths_.unified + "/cgroup.freeze", "0");
    if (v1 && err == 0) err = write_file(paths_.freezer + "/freezer.state", "THAWED");
    return err == 0 ? common::ok() : common::Status(fail("cgroup: thaw", err));
  }
  bool use_v2 = kind == FreezerKind::kV2 || (kind == FreezerKind::kAuto && v2);
  if (use_v2 && !v2) return make_error(Errc::kUnavailable, "cgroup: the jail has no v2 cgroup to freeze");
  if (!use_v2 && !v1) return make_error(Errc::kUnavailable, "cgroup: the jail has no v1 freezer cgroup");
  int err = use_v2 ? write_file(paths_.unified + "/cgroup.freeze", "1")
                   : write_file(paths_.freezer + "/freezer.state", "FROZEN");
  return err == 0 ? common::ok() : common::Status(fail("cgroup: freeze", err));
}

common::Status Cgroup::set_limits(const CgroupLimits& limits) {
  auto set = [](const std::string& path, const std::string& value, bool optional) -> common::Status {
    int err = write_file(path, value);
    if (err == 0 || (optional && err == ENOENT)) return common::ok();
    return fail("cgroup: write " + value + " to " + path, err);
  };
  const bool v2 = paths_.layout == CgroupLayout::kV2;
  if (limits.memory && !paths_.memory.empty()) {
    const std::string mem = std::to_string(limits.memory);
    if (v2) {
      if (auto s = set(paths_.memory + "/memory.max", mem, false); !s) return s;
    } else {
      // v1 refuses a memory limit above memsw, and memsw below the memory limit: raise memsw first
      // (it may fail while the old limit is higher; the second write then succeeds).
      (void)write_file(paths_.memory + "/memory.memsw.limit_in_bytes", mem);
      if (auto s = set(paths_.memory + "/memory.limit_in_bytes", mem, false); !s) return s;
      if (auto s = set(paths_.memory + "/memory.memsw.limit_in_bytes", mem, true); !s) return s;
      if (auto s = set(paths_.memory + "/memory.kmem.tcp.limit_in_bytes",
                       std::to_string(socket_memory_limit(limits.memory)), true); !s) return s;
    }
    limits_.memory = limits.memory;
  }
  if (limits.pids && !paths_.pids.empty()) {
    if (auto s = set(paths_.pids + "/pids.max", std::to_string(limits.pids), false); !s) return s;
    limits_.pids = limits.pids;
  }
  if (limits.cpu > 0 && !paths_.cpu.empty()) {
    const std::string quota = std::to_string(cpu_quota_us(limits.cpu)), period = std::to_string(kCpuPeriodUs);
    auto s = v2 ? set(paths_.cpu + "/cpu.max", quota + " " + period, false)
                : set(paths_.cpu + "/cpu.cfs_quota_us", quota, false);
    if (!s) return s;
    limits_.cpu = limits.cpu;
  }
  return common::ok();
}

uint64_t Cgroup::memory_usage() const {
  if (paths_.memory.empty()) return 0;
  const std::string file = paths_.layout == CgroupLayout::kV2 ? "/memory.current" : "/memory.usage_in_bytes";
  return std::strtoull(read_file(paths_.memory + file).c_str(), nullptr, 10);
}

double Cgroup::cpu_seconds() const {
  if (paths_.cpu.empty()) return 0;
  if (paths_.layout == CgroupLayout::kV2)
    return static_cast<double>(counter(read_file(paths_.cpu + "/cpu.stat"), "usage_usec")) / 1e6;
  // v1: cpuacct.usage (ns), in the cpu dir when cpu and cpuacct share a hierarchy (cpu,cpuacct),
  // else in the same place under the cpuacct mount.
  std::string usage = read_file(paths_.cpu + "/cpuacct.usage");
  if (usage.empty()) {
    std::string dir = paths_.cpu;
    if (const auto at = dir.rfind("/cpu/"); at != std::string::npos) usage = read_file(dir.replace(at, 5, "/cpuacct/") + "/cpuacct.usage");
  }
  return static_cast<double>(std::strtoull(usage.c_str(), nullptr, 10)) / 1e9;
}

std::string Cgroup::exit_reason() const {
  uint64_t oom = paths_.layout == CgroupLayout::kV2
                     ? counter(read_file(paths_.memory + "/memory.events"), "oom_kill")
                     : counter(read_file(paths_.memory + "/memory.oom_control"), "oom_kill");
  if (oom > 0) return "memory limit " + human_bytes(limits_.memory) + " exceeded";
  if (counter(read_file(paths_.pids + "/pids.events"), "max") > 0)
    return "pids limit " + std::to_string(limits_.pids) + " reached";
  return "";
}

void Cgroup::remove() const {
  for (auto it = paths_.dirs.rbegin(); it != paths_.dirs.rend(); ++it) {
    // The dying tasks leave asynchronously after the pid namespace is gone: retry ≤ 200 ms.
    for (int attempt = 0; attempt < 100; ++attempt) {
      if (::rmdir(it->c_str()) == 0 || errno == ENOENT) break;
      if (errno != EBUSY) break;
      sleep_ms(2);
    }
  }
  remove_owner_dirs(paths_);
}

}  // namespace cellgate::isolation
