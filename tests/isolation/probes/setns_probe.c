// SPDX-License-Identifier: BSD-3-Clause
// setns_probe: tries setns(2) into every namespace of pid 1 and of a host pid, in throwaway children.

#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe.h"

static void try_setns(const char* path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    probe_report(0, "open %s: %s", path, strerror(errno));
    return;
  }
  pid_t c = fork();
  if (c == 0) _exit(setns(fd, 0) == 0 ? 0 : errno);
  close(fd);
  int st = 0;
  waitpid(c, &st, 0);
  int code = WIFEXITED(st) ? WEXITSTATUS(st) : 255;
  probe_report(code == 0, "setns %s: %s", path, code == 0 ? "allowed" : strerror(code));
}

int main(int argc, char** argv) {
  if (argc != 2) probe_usage("setns_probe HOST_PID");
  const char* types[] = {"user", "mnt", "net", "pid", "ipc", "uts", "cgroup", "time"};
  const char* pids[] = {"1", argv[1]};
  char path[128];
  for (size_t p = 0; p < 2; ++p) {
    for (size_t t = 0; t < sizeof types / sizeof types[0]; ++t) {
      snprintf(path, sizeof path, "/proc/%s/ns/%s", pids[p], types[t]);
      try_setns(path);
    }
  }
  return probe_verdict();
}
