// SPDX-License-Identifier: BSD-3-Clause
// jail_plan: options + policy → everything the child needs, materialised before clone.
#include "isolation/jail_plan.h"

#include <cstring>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

#include "isolation/env.h"

namespace cellgate::isolation {
namespace {

int read_last_cap() {
  int fd = ::open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 63;  // the child ignores EINVAL for caps the kernel lacks
  char buf[16] = {};
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  int v = n > 0 ? std::atoi(buf) : 63;
  return v > 0 && v < 64 ? v : 63;
}

}  // namespace

ResolvedLimits resolve_limits(const Limits& options, const Limits& policy) {
  ResolvedLimits r;
  r.memory = options.memory.value_or(policy.memory.value_or(r.memory));
  r.pids = options.pids.value_or(policy.pids.value_or(r.pids));
  r.cpu = options.cpu.value_or(policy.cpu.value_or(r.cpu));
  r.nofile = options.nofile.value_or(policy.nofile.value_or(r.nofile));
  r.fsize = options.fsize.value_or(policy.fsize.value_or(r.fsize));
  r.tmp_size = options.tmp_size.value_or(policy.tmp_size.value_or(r.tmp_size));
  return r;
}

std::vector<child::Rlimit> plan_rlimits(const ResolvedLimits& limits, uint64_t hard_nofile_max) {
  uint64_t nofile = std::min(limits.nofile, hard_nofile_max);
  return {
      {RLIMIT_CORE, {0, 0}},
      {RLIMIT_NOFILE, {nofile, nofile}},
      {RLIMIT_FSIZE, {limits.fsize, limits.fsize}},
      // A caller's RLIMIT_RTPRIO / RLIMIT_NICE would let the unprivileged kernel take SCHED_FIFO or
      // a negative nice itself (sched(7), setpriority(2)); nothing inside needs either.
      {RLIMIT_RTPRIO, {0, 0}},
      {RLIMIT_NICE, {0, 0}},
  };
}

common::Result<JailPlan> JailPlan::build_common(const JailOptions& options, const Policy& policy,
                                                std::vector<sock_filter> filter) {
  JailPlan p;
  p.limits_ = resolve_limits(options.limits, policy.limits);
  p.hostname_ = policy.hostname;
  p.umask_ = policy.umask;
  p.last_cap_ = read_last_cap();
  p.argv_ = options.command;
  p.env_ = build_env(policy.env, options.env);
  p.exec_paths_ = exec_candidates(options.command[0], p.env_);
  if (p.exec_paths_.empty())
    return common::make_error(common::Errc::kBadRequest, "command " + options.command[0] + " not found in PATH");
  p.filter_ = std::move(filter);
  return p;
}

common::Result<JailPlan> JailPlan::build(const JailOptions& options, const Policy& policy,
                                         const MountInputs& mounts, std::vector<sock_filter> filter) {
  auto p = build_common(options, policy, std::move(filter));
  if (!p) return p;
  p->hostname_ = options.hostname.value_or(policy.hostname);
  p->new_root_ = mounts.new_root;
  auto m = MountPlan::build(mounts, probe_host_path);
  if (!m) return m.error();
  p->mounts_ = std::move(m.value());
  rlimit nofile{};
  ::getrlimit(RLIMIT_NOFILE, &nofile);
  p->rlimits_ = plan_rlimits(p->limits_, nofile.rlim_max);
  return p;
}

common::Result<JailPlan> JailPlan::build_join(const JailOptions& options, const Policy& policy,
                                              std::vector<sock_filter> filter, std::vector<child::Rlimit> rlimits) {
  auto p = build_common(options, policy, std::move(filter));
  if (!p) return p;
  p->rlimits_ = std::move(rlimits);
  return p;
}

void JailPlan::make_pointers() {
  argv_ptrs_.clear();
  env_ptrs_.clear();
  exec_ptrs_.clear();
  for (auto& s : argv_) argv_ptrs_.push_back(s.data());
  argv_ptrs_.push_back(nullptr);
  for (auto& s : env_) env_ptrs_.push_back(s.data());
  env_ptrs_.push_back(nullptr);
  for (auto& s : exec_paths_) exec_ptrs_.push_back(s.c_str());
  exec_ptrs_.push_back(nullptr);
}

namespace {
char* g_title_area = nullptr;
size_t g_title_len = 0;
}  // namespace

void remember_helper_argv(int argc, char** argv) {
  if (argc <= 0 || argv[0] == nullptr) return;
  // The kernel lays argv strings out contiguously: [argv[0], end of argv[argc-1]] is /proc/pid/cmdline.
  g_title_area = argv[0];
  g_title_len = static_cast<size_t>(argv[argc - 1] + std::strlen(argv[argc - 1]) - argv[0]);
}

child::ChildPlan JailPlan::child_plan(int sync_fd, int report_fd, int exit_fd) {
  make_pointers();
  child::ChildPlan c{};
  c.mounts = mounts_.ops().data();
  c.n_mounts = mounts_.ops().size();
  c.new_root = new_root_.c_str();
  c.hostname = hostname_.c_str();
  c.hostname_len = hostname_.size();
  c.rlimits = rlimits_.data();
  c.n_rlimits = rlimits_.size();
  c.filter = filter_.data();
  c.filter_len = static_cast<unsigned short>(filter_.size());
  c.exec_paths = exec_ptrs_.data();
  c.argv = argv_ptrs_.data();
  c.envp = env_ptrs_.data();
  c.cwd = "/workspace";
  c.uid = kSandboxId;
  c.gid = kSandboxId;
  c.umask = umask_;
  c.last_cap = last_cap_;
  c.sync_fd = sync_fd;
  c.report_fd = report_fd;
  c.exit_fd = exit_fd;
  c.egress_fd = -1;
  c.egress_keep_fd = -1;
  c.title_area = g_title_area;
  c.title_len = g_title_len;
  return c;
}

}  // namespace cellgate::isolation
