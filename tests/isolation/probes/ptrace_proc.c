// SPDX-License-Identifier: BSD-3-Clause
// ptrace_proc: tries to ptrace-attach to a host process (by its host pid) and to its own child,
// and to read the child's memory with process_vm_readv.
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe.h"

// kernel.yama.ptrace_scope=3 turns every attach off, root's included (Documentation/admin-guide/LSM/
// Yama.rst; process_vm_readv is an attach-mode access too). Unfiltered, an EPERM there is the host's
// doing: no door here to hold.
static void attempt(const char* what, long rc) {
  int err = errno;
  if (rc < 0 && err == EPERM && probe_seccomp_mode() == 0 &&
      probe_read_long("/proc/sys/kernel/yama/ptrace_scope") == 3) {
    probe_unavailable("%s: ptrace is off on this host (kernel.yama.ptrace_scope=3)", what);
    return;
  }
  errno = err;
  probe_attempt(what, rc);
}

int main(int argc, char** argv) {
  if (argc != 2) probe_usage("ptrace_proc HOST_PID");
  pid_t host = (pid_t)atoi(argv[1]);
  long rc = ptrace(PTRACE_SEIZE, host, NULL, NULL);
  attempt("PTRACE_SEIZE host pid", rc);
  if (rc == 0) ptrace(PTRACE_DETACH, host, NULL, NULL);

  static char secret[] = "child-secret";
  pid_t child = fork();
  if (child < 0) return PROBE_ERROR;
  if (child == 0) {
    pause();
    _exit(0);
  }
  rc = ptrace(PTRACE_ATTACH, child, NULL, NULL);
  attempt("PTRACE_ATTACH own child", rc);
  if (rc == 0) {
    waitpid(child, NULL, __WALL);
    ptrace(PTRACE_DETACH, child, NULL, NULL);
  }
  char buf[sizeof secret];
  struct iovec local = {buf, sizeof buf};
  struct iovec remote = {secret, sizeof secret};
  attempt("process_vm_readv own child", process_vm_readv(child, &local, 1, &remote, 1, 0));
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  return probe_verdict();
}
