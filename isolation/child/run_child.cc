// SPDX-License-Identifier: BSD-3-Clause
// run_child: the isolation sequence in the child, as a checklist (pid 1, then the kernel).
#include "isolation/child/run_child.h"

#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include "isolation/child/child_steps.h"

#ifndef PR_SET_MEMORY_MERGE
#define PR_SET_MEMORY_MERGE 67  // linux/prctl.h of Linux 6.4; Debian 12's headers are older
#endif

namespace cellgate::isolation::child {
namespace {

void noop_handler(int) {}

// pid 1 ignores signals whose handler is SIG_DFL even when the helper sends them
// (SIGNAL_UNKILLABLE, kernel/signal.c sig_task_ignored), so install a real handler and keep
// the signals blocked: sigwaitinfo() then takes them.
int install_init_signals() noexcept {
  sigset_t set;
  forwarded_signals(&set);
  sigaddset(&set, SIGCHLD);
  struct sigaction sa {};
  sa.sa_handler = noop_handler;
  sigemptyset(&sa.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sigismember(&set, sig) == 1 && sigaction(sig, &sa, nullptr) < 0) return errno;
  }
  return sigprocmask(SIG_BLOCK, &set, nullptr) < 0 ? errno : 0;
}

// runs in: the kernel's process (pid 2), forked from init after init dropped every privilege
// and loaded the seccomp filter, both of which it inherits.
[[noreturn]] void exec_kernel(const ChildPlan& plan) noexcept {
  if (setsid() < 0) fail(plan, Stage::kSetsid, errno);
  if (int err = reset_signals()) fail(plan, Stage::kSignals, err);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) fail(plan, Stage::kPdeathsig, errno);
  if (chdir(plan.cwd) < 0) fail(plan, Stage::kChdir, errno);
  umask(plan.umask);
  // Every present and future private mapping of this process becomes mergeable (MMF_VM_MERGE_ANY),
  // kept across fork and, since Linux 6.7, across execve (Documentation/admin-guide/mm/ksm.rst,
  // "Controlling KSM with prctl"). Set here, not in init: only the kernel's memory is the operator's
  // to share. ksmd merges nothing unless /sys/kernel/mm/ksm/run is 1 (the gateway's side).
  if (plan.memory_merge && prctl(PR_SET_MEMORY_MERGE, 1, 0, 0, 0) < 0) fail(plan, Stage::kMemoryMerge, errno);
  int keep[] = {plan.report_fd};
  if (int err = apply_close_fds_except(keep, 1)) fail(plan, Stage::kFds, err);
  // The helper learns our host pid from the SCM_CREDENTIALS of this record.
  report(plan.report_fd, ReportKind::kHello, Stage::kExec, 0, 0);
  if (plan.enter != nullptr) {
    close(plan.report_fd);  // the helper's EOF: the kernel "has exec'd"
    plan.enter(plan);
    _exit(127);
  }
  exec_command(plan);
}

// Init's own lockdown, before it forks the kernel: no capabilities, uid 1000, PDEATHSIG toward
// the helper (setresuid cleared it), no_new_privs and seccomp. The kernel inherits all of it.
void lock_down(const ChildPlan& plan) noexcept {
  Stage stage = Stage::kNone;
  if (int err = apply_drop_privileges(plan, &stage)) fail(plan, stage, err);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) fail(plan, Stage::kPdeathsig, errno);
  if (!helper_alive(plan.sync_fd)) _exit(127);  // the helper died before PDEATHSIG was re-armed
  if (chdir("/") < 0) fail(plan, Stage::kChdir, errno);
  if (int err = apply_seccomp(plan, &stage)) fail(plan, stage, err);
}

}  // namespace

bool wait_for_helper(int sync_fd) noexcept {
  char byte = 0;
  ssize_t n;
  while ((n = read(sync_fd, &byte, 1)) < 0 && errno == EINTR) {
  }
  return n == 1;
}

bool helper_alive(int sync_fd) noexcept {
  pollfd p{sync_fd, POLLIN, 0};
  return !(poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR)) != 0);
}

void exec_command(const ChildPlan& plan) noexcept {
  int err = ENOENT;
  for (const char* const* path = plan.exec_paths; *path != nullptr; ++path) {
    execve(*path, plan.argv, plan.envp);
    if (errno != ENOENT && errno != ENOTDIR) {
      err = errno;
      break;
    }
  }
  fail(plan, Stage::kExec, err);
}

int reset_signals() noexcept {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);  // EINVAL for KILL/STOP
  sigset_t none;
  sigemptyset(&none);
  return sigprocmask(SIG_SETMASK, &none, nullptr) < 0 ? errno : 0;
}

void run_child(const ChildPlan& plan) noexcept {
  // Our memory is a copy of the helper's, so this leaves the helper's own cmdline alone on the host.
  if (plan.title_area != nullptr && plan.title_len > 0) {
    static constexpr char kTitle[] = "cellgate-init";
    memset(plan.title_area, 0, plan.title_len);
    memcpy(plan.title_area, kTitle, plan.title_len < sizeof(kTitle) ? plan.title_len - 1 : sizeof(kTitle) - 1);
  }
  // Byte 1: our uid/gid maps are written (and rw trees idmapped).
  if (!wait_for_helper(plan.sync_fd)) _exit(127);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) fail(plan, Stage::kPdeathsig, errno);
  if (!helper_alive(plan.sync_fd)) _exit(127);
  // Leave the helper's process group: jupyter_client signals the helper with killpg(), and init
  // must get each signal once, forwarded by the helper, not a second copy straight from killpg.
  if (setsid() < 0) fail(plan, Stage::kSetsid, errno);
  umask(0);
  // We still carry the helper's kuid 0, which the new user namespace does not map (our uid
  // reads as 65534 and file creation fails with EOVERFLOW): become the namespace's own root.
  if (setresgid(0, 0, 0) < 0) fail(plan, Stage::kSetgid, errno);
  if (setresuid(0, 0, 0) < 0) fail(plan, Stage::kSetuid, errno);
  if (setgroups(0, nullptr) < 0) fail(plan, Stage::kSetgroups, errno);
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0)
    fail(plan, Stage::kMountPrivate, errno);
  uint32_t index = 0;
  if (int err = apply_mounts(plan.mounts, plan.n_mounts, &index)) fail(plan, Stage::kMount, err, index);
  if (int err = apply_pivot_root(plan.new_root)) fail(plan, Stage::kPivotRoot, err);
  if (int err = apply_remount_root_ro()) fail(plan, Stage::kRemountRoot, err);
  // Byte 2: we are in our cgroups. The helper moves us while we build the root above, because
  // a v1 cgroup.procs write can cost a whole RCU grace period (~10 ms). A cgroup namespace
  // created now is rooted there: /proc/self/cgroup shows "/" and the host layout stays hidden.
  if (!wait_for_helper(plan.sync_fd)) _exit(127);
  if (unshare(CLONE_NEWCGROUP) < 0) fail(plan, Stage::kCgroupNs, errno);
  if (sethostname(plan.hostname, plan.hostname_len) < 0) fail(plan, Stage::kHostname, errno);
  if (int err = apply_loopback_up()) fail(plan, Stage::kLoopback, err);
  int egress_listener = -1;
  if (plan.egress_fd >= 0) {
    if (int err = apply_egress_listener(plan, &egress_listener)) fail(plan, Stage::kEgress, err);
  }
  if (int err = apply_rlimits(plan.rlimits, plan.n_rlimits)) fail(plan, Stage::kRlimits, err);
  if (int err = install_init_signals()) fail(plan, Stage::kSignals, err);
  lock_down(plan);
  pid_t kernel = _Fork();  // no atfork handlers: we are the only thread
  if (kernel < 0) fail(plan, Stage::kFork, errno);
  if (kernel == 0) exec_kernel(plan);
  // Closing our copy of the report socket lets the helper see EOF once the kernel has exec'd. The
  // egress listener stays open here for the jail's life (the port stays ours, never the kernel's).
  int keep[] = {plan.sync_fd, plan.exit_fd, egress_listener};
  if (int err = apply_close_fds_except(keep, 3)) fail(plan, Stage::kFds, err);
  apply_unmap(plan.shed, plan.n_shed);  // the kernel has its own copy now
  run_init_loop(plan, kernel);
}

}  // namespace cellgate::isolation::child
