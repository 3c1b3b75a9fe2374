// SPDX-License-Identifier: BSD-3-Clause
// init_loop: the jail's pid 1 — reaps zombies, forwards signals, exits with the kernel.
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "isolation/child/child_steps.h"

namespace cellgate::isolation::child {
namespace {

[[noreturn]] void finish(const ChildPlan& plan, int status) noexcept {
  // The helper reads the raw wait status so it can tell exit(130) from death by SIGINT.
  while (write(plan.exit_fd, &status, sizeof status) < 0 && errno == EINTR) {
  }
  // Everything else in the namespace goes with the kernel (same uid, so init may signal it).
  kill(-1, SIGKILL);
  while (waitpid(-1, nullptr, 0) > 0 || errno == EINTR) {
  }
  if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
  _exit(128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0));
}

}  // namespace

void forwarded_signals(sigset_t* set) noexcept {
  sigemptyset(set);
  static constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
  for (int sig : kForwarded) sigaddset(set, sig);
}

void run_init_loop(const ChildPlan& plan, pid_t kernel) noexcept {
  sigset_t waited;
  forwarded_signals(&waited);
  sigaddset(&waited, SIGCHLD);
  for (;;) {
    siginfo_t info;
    int sig = sigwaitinfo(&waited, &info);
    if (sig < 0) continue;  // EINTR
    if (sig != SIGCHLD) {
      // Jupyter clients signal the kernel's process group (LocalProvisioner uses killpg), so
      // `!sleep 100` children are interrupted too; the kernel leads its own session.
      if (kill(-kernel, sig) < 0) kill(kernel, sig);
      continue;
    }
    for (;;) {
      int status = 0;
      pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid < 0 && errno == EINTR) continue;
      if (pid <= 0) break;
      if (pid == kernel) finish(plan, status);
    }
  }
}

}  // namespace cellgate::isolation::child
