// SPDX-License-Identifier: BSD-3-Clause
// run_join: the child world of `cellgate-jail --join` (enter a running jail, lock down, exec).
#pragma once

#include "isolation/child/run_child.h"

namespace cellgate::isolation::child {

// The join child's plan: the command part of a ChildPlan (argv, env, exec paths, cwd, uid/gid,
// umask, rlimits, filter, last_cap, sync_fd, report_fd; the mount and init fields are unused)
// plus the jail to enter.
struct JoinChildPlan {
  ChildPlan base;
  int ns_fd;     // pidfd of the jail's init: setns(2) with several CLONE_NEW* flags at once
  int ns_flags;  // user, mnt, net, ipc, uts, cgroup (the pid namespace is the helper's pid_for_children)
};

// runs in: the join child (already in the jail's pid namespace and cgroups once the helper's
// first byte arrives), async-signal-safe. Never returns: enters the namespaces, drops every
// privilege, loads the filter and execs; on a failure it reports {stage, errno} and _exits(127).
[[noreturn]] void run_join(const JoinChildPlan& plan) noexcept;

}  // namespace cellgate::isolation::child
