// SPDX-License-Identifier: BSD-3-Clause
// jail_plan: options + policy → everything the child needs, materialised before clone.
#pragma once

#include <linux/filter.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "isolation/child/run_child.h"
#include "isolation/jail_options.h"
#include "isolation/mount_plan.h"
#include "isolation/policy_file.h"

namespace cellgate::isolation {

struct ResolvedLimits {
  uint64_t memory = 1ULL << 30;
  uint64_t pids = 256;
  double cpu = 1;
  uint64_t nofile = 1024;
  uint64_t fsize = 1ULL << 30;
  uint64_t tmp_size = 256ULL << 20;
};
// Command line beats policy beats the built-in numbers above.
ResolvedLimits resolve_limits(const Limits& options, const Limits& policy);
// RLIMIT_CORE 0, RLIMIT_NOFILE, RLIMIT_FSIZE; hard values are clamped to `hard_nofile_max`
// (raising a hard limit needs CAP_SYS_RESOURCE in the initial namespace).
std::vector<child::Rlimit> plan_rlimits(const ResolvedLimits& limits, uint64_t hard_nofile_max);

// Called from main() with its argv, so that the jail's init can blank the helper's argv strings,
// which it inherits (see ChildPlan::title_area).
void remember_helper_argv(int argc, char** argv);

class JailPlan {
 public:
  // Builds every piece; the filter must already be exported. Strings are owned here.
  static common::Result<JailPlan> build(const JailOptions& options, const Policy& policy,
                                        const MountInputs& mounts, std::vector<sock_filter> filter);
  // For --join: the command part only (argv, env, PATH search, umask, filter, rlimits);
  // no mounts, the jail exists already.
  static common::Result<JailPlan> build_join(const JailOptions& options, const Policy& policy,
                                             std::vector<sock_filter> filter, std::vector<child::Rlimit> rlimits);
  // The child's view; valid while this JailPlan lives and is not moved.
  child::ChildPlan child_plan(int sync_fd, int report_fd, int exit_fd);
  const ResolvedLimits& limits() const { return limits_; }
  const std::vector<std::string>& env() const { return env_; }
  const std::vector<std::string>& exec_paths() const { return exec_paths_; }
  const MountPlan& mounts() const { return mounts_; }
  JailPlan(JailPlan&&) = default;

 private:
  JailPlan() = default;
  // What build and build_join share: limits, the command, its environment and PATH search, the filter.
  static common::Result<JailPlan> build_common(const JailOptions& options, const Policy& policy,
                                               std::vector<sock_filter> filter);
  void make_pointers();

  ResolvedLimits limits_;
  std::string hostname_;
  std::string new_root_;
  mode_t umask_ = 022;
  int last_cap_ = 63;
  std::vector<std::string> argv_, env_, exec_paths_;
  std::vector<char*> argv_ptrs_, env_ptrs_;
  std::vector<const char*> exec_ptrs_;
  MountPlan mounts_;
  std::vector<child::Rlimit> rlimits_;
  std::vector<sock_filter> filter_;
};

}  // namespace cellgate::isolation
