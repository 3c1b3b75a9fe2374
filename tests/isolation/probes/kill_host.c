// SPDX-License-Identifier: BSD-3-Clause
// kill_host: tries to signal a host process by its host pid number (the test checks it survives).
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "probe.h"

int main(int argc, char** argv) {
  if (argc != 3) probe_usage("kill_host HOST_PID MARKER");
  pid_t pid = (pid_t)atoi(argv[1]);
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = 0;
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] == 0) buf[i] = ' ';
    }
    // The same number inside the jail's pid namespace is some jail process, not the host's.
    if (strstr(buf, argv[2]) == NULL) {
      probe_report(0, "pid %d is a jail process (%s), not the host one", pid, buf);
      return probe_verdict();
    }
    probe_report(1, "host process %d visible in /proc", pid);
  }
  probe_attempt("kill(host pid, 0)", kill(pid, 0));
  probe_attempt("kill(host pid, SIGKILL)", kill(pid, SIGKILL));
  return probe_verdict();
}
