// SPDX-License-Identifier: BSD-3-Clause
// join: `cellgate-jail --join STATUS_FILE` — run one command inside a running jail.
#pragma once

#include <sys/types.h>

#include <optional>

#include "common/unique_fd.h"
#include "isolation/cgroup.h"
#include "isolation/jail.h"
#include "isolation/jail_options.h"
#include "isolation/jail_plan.h"
#include "isolation/join_target.h"
#include "isolation/policy_file.h"

namespace cellgate::isolation {

class Join {
 public:
  // policy: nullopt = the one the jail recorded beside its status file (record_policy).
  Join(JailOptions options, std::optional<Policy> policy);
  // runs in: the helper's only thread. Validates the jail, enters its pid namespace (for our
  // child only), forks the command into its cgroups, lets the child lock itself down and exec,
  // forwards signals, and returns the command's exit code (128+signal), or 126 if joining failed.
  int run();

 private:
  std::optional<SetupFailure> prepare();
  std::optional<SetupFailure> spawn();
  int supervise();
  int fail(const SetupFailure& f);

  JailOptions options_;
  std::optional<Policy> policy_;
  std::optional<JoinTarget> target_;
  std::optional<Cgroup> cgroup_;
  std::optional<JailPlan> plan_;
  common::UniqueFd pidfd_, report_, sync_, signal_fd_;
  pid_t child_pid_ = -1;
};

}  // namespace cellgate::isolation
