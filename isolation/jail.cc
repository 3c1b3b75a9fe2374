// SPDX-License-Identifier: BSD-3-Clause
// jail: the helper's parent side of jail.h: prepare (uid slot, cgroup, workspace trees, plan) and
// clone + release the child; supervisor.cc runs it (Jail::run) and supervises the jail after.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "isolation/clone_into.h"
#include "isolation/egress_attach.h"
#include "isolation/etc_secrets.h"
#include "isolation/host_dirs.h"
#include "isolation/inherited_state.h"
#include "isolation/jail.h"
#include "isolation/seccomp_policy.h"
#include "isolation/usr_etc_links.h"

namespace cellgate::isolation {
namespace {

constexpr size_t kMaxMplFileBytes = 8 << 20;

SetupFailure sys_failure(const std::string& stage, int err, const std::string& what = "") {
  return SetupFailure{stage, err, (what.empty() ? stage : what) + ": " + std::strerror(err)};
}

// A descriptor number above every one this process holds now, which the child (a copy of this fd
// table, then fewer) can dup its egress listener to and announce in the status file.
int first_fd_above_open() {
  int highest = 2;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (dirent* e = ::readdir(d)) highest = std::max(highest, std::atoi(e->d_name));
    ::closedir(d);
  }
  return std::max(highest + 1, 64);
}

int write_text(const std::string& path, const std::string& text) {
  common::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return errno;
  ssize_t n = ::write(fd.get(), text.data(), text.size());
  return n == static_cast<ssize_t>(text.size()) ? 0 : (n < 0 ? errno : EIO);
}

bool read_small_file(const std::string& path, std::string& out) {
  common::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return false;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > kMaxMplFileBytes) return false;
  }
}

}  // namespace

Jail::Jail(JailOptions options, Policy policy) : options_(std::move(options)), policy_(std::move(policy)) {
  limits_ = resolve_limits(options_.limits, policy_.limits);
  ready_fd_ = options_.ready_fd;
}

std::vector<std::pair<std::string, std::string>> Jail::mpl_seed_files() const {
  std::vector<std::pair<std::string, std::string>> files;
  if (policy_.mpl_cache_dir.empty()) return files;
  DIR* d = ::opendir(policy_.mpl_cache_dir.c_str());
  if (d == nullptr) return files;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (!name.starts_with("fontlist-") || !name.ends_with(".json") || files.size() >= 4) continue;
    std::string text;
    if (read_small_file(policy_.mpl_cache_dir + "/" + name, text)) files.emplace_back(name, std::move(text));
  }
  ::closedir(d);
  return files;
}

std::optional<SetupFailure> Jail::prepare() {
  shed_inherited_state();
  // Before the status file can say "running": a --join must find the policy this jail has.
  if (!record_policy(policy_, options_.status_file))
    return sys_failure("prepare", errno, "write " + recorded_policy_path(options_.status_file));
  for (const char* dir : {kRunDir, kNewRoot}) {
    if (::mkdir(dir, 0755) < 0 && errno != EEXIST) return sys_failure("prepare", errno, std::string("mkdir ") + dir);
  }
  if (::chmod(kNewRoot, 0755) < 0) return sys_failure("prepare", errno, std::string("chmod ") + kNewRoot);
  auto slot = acquire_uid_slot(kUidLockDir, options_.uid_start, options_.uid_count,
                               static_cast<uint64_t>(::getpid()));
  if (!slot) return SetupFailure{"uid_slot", slot.error().sys_errno, slot.error().message};
  slot_ = std::move(slot.value());

  if (!options_.no_cgroup) {
    std::string base = options_.cgroup_root.empty() ? "/sys/fs/cgroup" : options_.cgroup_root;
    auto cg = Cgroup::create(base, options_.name, CgroupLimits{limits_.memory, limits_.pids, limits_.cpu},
                             CgroupPlacement{options_.cgroup_owner, options_.kernels_cpu_weight});
    if (!cg) return SetupFailure{"cgroup", cg.error().sys_errno, cg.error().message};
    cgroup_.emplace(std::move(cg.value()));
  }

  if (!options_.egress_socket.empty()) {
    auto egress = announce_to_egress(options_.egress_socket, options_.name, std::chrono::seconds(10));
    if (!egress) return SetupFailure{"egress", egress.error().sys_errno, egress.error().message};
    egress_ = std::move(egress.value());
    egress_keep_fd_ = first_fd_above_open();
  }

  auto filter = cached_seccomp_bpf(policy_, std::string(kRunDir) + "/seccomp");
  if (!filter) return SetupFailure{"seccomp", filter.error().sys_errno, filter.error().message};

  // Read-write binds: a detached clone of each tree, idmapped after clone (see idmap_or_chown).
  // A root-owned top dir is handed to the stable on-disk owner 1000 first, so the launcher
  // may simply mkdir as root.
  MountInputs in;
  in.new_root = kNewRoot;
  in.hostname = options_.hostname.value_or(policy_.hostname);
  in.tmp_size = limits_.tmp_size;
  auto add_rw = [&](const std::string& path, bool entries) -> std::optional<SetupFailure> {
    // Before anything is opened or handed over: a secret's dir must never be chowned to the sandbox.
    if (std::string_view secret = overlapping_secret(path); !secret.empty())
      return SetupFailure{"options", 0, path + " would bring " + std::string(secret) +
                                            " into the jail: host secrets are never bound", 125};
    common::UniqueFd dir = open_dir_no_symlinks(path);
    if (!dir && errno == ELOOP)
      return SetupFailure{"workspace", ELOOP, "workspace: " + path + " passes through a symlink (refused)"};
    if (!dir) return sys_failure("workspace", errno, "open " + path);
    if (may_hand_over(dir.get(), entries)) chown_tree_top(dir.get(), entries, {0}, kSandboxId);
    // Clone the tree from the fd just checked, not from the path: a swap after the check cannot redirect it.
    common::UniqueFd tree(static_cast<int>(
        ::open_tree(dir.get(), "", AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE)));
    RwDir rw{path, entries, std::move(tree), std::move(dir)};
    rw_dirs_.push_back(std::move(rw));
    return std::nullopt;
  };
  if (!options_.workspace.empty()) {
    if (auto f = add_rw(options_.workspace, false)) return f;
  }
  for (const auto& dir : options_.bind_same) {
    if (auto f = add_rw(dir, true)) return f;
  }
  size_t i = 0;
  if (!options_.workspace.empty()) {
    in.workspace = RwBind{rw_dirs_[0].path, rw_dirs_[0].tree.get()};
    i = 1;
  }
  for (; i < rw_dirs_.size(); ++i) in.bind_same.push_back(RwBind{rw_dirs_[i].path, rw_dirs_[i].tree.get()});
  in.ro_binds = policy_.ro_binds;
  in.ro_binds.insert(in.ro_binds.end(), options_.ro_binds.begin(), options_.ro_binds.end());
  in.etc_binds = policy_.etc_binds;
  if (policy_.usr_etc_links) {
    for (auto& b : etc_binds_for_links(usr_etc_link_targets(kRunDir), policy_.etc_binds)) in.etc_binds.push_back(std::move(b));
  }
  in.cache_binds = policy_.cache_binds;
  in.mpl_files = mpl_seed_files();
  auto plan = JailPlan::build(options_, policy_, in, std::move(filter.value()));
  if (!plan && plan.error().code == common::Errc::kBadRequest)
    return SetupFailure{"options", 0, plan.error().message, 125};
  if (!plan) return SetupFailure{"plan", plan.error().sys_errno, plan.error().message};
  plan_.emplace(std::move(plan.value()));
  return std::nullopt;
}

void Jail::idmap_or_chown() {
  common::UniqueFd userns(::open(("/proc/" + std::to_string(init_pid_) + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC));
  for (auto& rw : rw_dirs_) {
    bool mapped = false;
    if (rw.tree && userns) {
      // On-disk uid N appears as inside N (the jail's map is 0..65535 → slot), so files of
      // `sandbox` are stored as 1000:1000 whatever slot the jail got.
      mount_attr attr{};
      attr.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
      attr.userns_fd = static_cast<uint64_t>(userns.get());
      mapped = ::mount_setattr(rw.tree.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) == 0;
    }
    if (mapped) continue;
    // Fallback (file system without idmapped mounts): hand the dir to this slot's host uid
    // (only what prepare() gave to 1000: a root-owned dir it refused stays root's).
    if (rw.dir) chown_tree_top(rw.dir.get(), rw.entries, {kSandboxId}, static_cast<uid_t>(slot_.base + kSandboxId));
  }
}

std::optional<SetupFailure> Jail::spawn() {
  int sync[2], exitp[2], report[2];
  if (::pipe2(sync, O_CLOEXEC) < 0 || ::pipe2(exitp, O_CLOEXEC) < 0)
    return sys_failure("clone", errno, "pipe");
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, report) < 0) return sys_failure("clone", errno, "socketpair");
  common::UniqueFd sync_r(sync[0]), exit_w(exitp[1]), report_child(report[1]);
  sync_.reset(sync[1]);
  exit_.reset(exitp[0]);
  report_.reset(report[0]);
  int one = 1;
  // SO_PASSCRED: the kernel child's hello carries its pid translated into our pid namespace.
  if (::setsockopt(report_.get(), SOL_SOCKET, SO_PASSCRED, &one, sizeof one) < 0)
    return sys_failure("clone", errno, "SO_PASSCRED");
  child::ChildPlan cp = plan_->child_plan(sync_r.get(), report_child.get(), exit_w.get());
  cp.enter = hooks_.enter;
  cp.shed = hooks_.shed;
  cp.n_shed = hooks_.n_shed;
  cp.memory_merge = options_.memory_merge;
  cp.egress_fd = egress_ ? egress_.get() : -1;
  cp.egress_port = options_.egress_port;
  cp.egress_keep_fd = egress_keep_fd_;

  // Born in the v2 dir when there is one (clone_into.h); otherwise placed by writing cgroup.procs.
  common::UniqueFd v2_dir = open_cgroup_dir(cgroup_ ? cgroup_->paths().unified : std::string());
  relay_ = StdioRelay::wrap(options_.kernel_log_bytes);
  const Cloned cloned = clone_into_cgroup(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC |
                                              CLONE_NEWUTS,
                                          v2_dir.get());
  const long pid = cloned.pid;
  const bool placed_v2 = cloned.placed;
  if (pid != 0) {
    int err = errno;
    relay_.restore();
    errno = err;
  }
  if (pid < 0) return sys_failure("clone", errno);
  if (pid == 0) {
    // The child must not hold the helper's ends: the sync pipe's EOF is how it notices our death.
    ::close(sync[1]);
    ::close(exitp[0]);
    ::close(report[0]);
    child::run_child(cp);
  }
  init_pid_ = static_cast<pid_t>(pid);
  pidfd_.reset(cloned.pidfd);
  egress_.reset();  // the child's now: the proxy sees EOF only if the child dies before sending
  if (hooks_.spawned != nullptr) hooks_.spawned();

  const std::string map = "0 " + std::to_string(slot_.base) + " " + std::to_string(kSlotSize) + "\n";
  const std::string proc = "/proc/" + std::to_string(init_pid_);
  if (int err = write_text(proc + "/uid_map", map)) return sys_failure("uid_map", err);
  if (int err = write_text(proc + "/gid_map", map)) return sys_failure("gid_map", err);
  idmap_or_chown();
  for (auto& rw : rw_dirs_) {
    rw.tree.reset();
    rw.dir.reset();
  }
  char go = 1;
  if (::write(sync_.get(), &go, 1) != 1) return sys_failure("sync", errno);
  // The child builds its root meanwhile; it waits for the second byte before it can fork or exec.
  if (cgroup_) {
    if (auto s = cgroup_->place(init_pid_, placed_v2); !s) return SetupFailure{"cgroup", s.error().sys_errno, s.error().message};
  }
  if (::write(sync_.get(), &go, 1) != 1) return sys_failure("sync", errno);
  return std::nullopt;
}

}  // namespace cellgate::isolation
