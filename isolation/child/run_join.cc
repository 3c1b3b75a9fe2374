// SPDX-License-Identifier: BSD-3-Clause
// run_join: the join sequence in the child, as a checklist (setns, lock down, exec).
#include "isolation/child/run_join.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "isolation/child/child_steps.h"

namespace cellgate::isolation::child {

void run_join(const JoinChildPlan& jp) noexcept {
  const ChildPlan& plan = jp.base;
  // The byte: the helper has placed us in every cgroup of the jail (limits count us from now).
  if (!wait_for_helper(plan.sync_fd)) _exit(127);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) fail(plan, Stage::kPdeathsig, errno);
  // getppid() is 0 here (our parent is outside our pid namespace), so the parent-died race is
  // checked on the sync pipe: only the helper holds its write end.
  if (!helper_alive(plan.sync_fd)) _exit(127);
  // Our own session: no controlling terminal (TIOCSTI), and the helper forwards each signal to
  // our process group exactly once.
  if (setsid() < 0) fail(plan, Stage::kSetsid, errno);
  // One setns(2) on the init's pidfd enters all of them atomically, the user namespace first so
  // the others are permitted (setns(2) "pidfd", Linux 5.8); it also sets root and cwd to the
  // jail's root (the mount namespace's root after its pivot_root).
  if (setns(jp.ns_fd, jp.ns_flags) < 0) fail(plan, Stage::kSetns, errno);
  if (chdir(plan.cwd) < 0) fail(plan, Stage::kChdir, errno);
  if (int err = apply_rlimits(plan.rlimits, plan.n_rlimits)) fail(plan, Stage::kRlimits, err);
  umask(plan.umask);
  if (int err = reset_signals()) fail(plan, Stage::kSignals, err);
  Stage stage = Stage::kNone;
  if (int err = apply_drop_privileges(plan, &stage)) fail(plan, stage, err);
  // setresuid cleared PDEATHSIG (prctl(2) PR_SET_PDEATHSIG): re-arm, then re-check the race.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) fail(plan, Stage::kPdeathsig, errno);
  if (!helper_alive(plan.sync_fd)) _exit(127);
  // The report socket and the sync pipe are close-on-exec: EOF tells the helper we exec'd.
  int keep[] = {plan.sync_fd, plan.report_fd};
  if (int err = apply_close_fds_except(keep, 2)) fail(plan, Stage::kFds, err);
  if (int err = apply_seccomp(plan, &stage)) fail(plan, stage, err);
  exec_command(plan);
}

}  // namespace cellgate::isolation::child
