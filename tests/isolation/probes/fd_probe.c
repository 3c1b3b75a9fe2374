// SPDX-License-Identifier: BSD-3-Clause
// fd_probe: any descriptor beyond stdio is a leak from outside (the test opens some without
// O_CLOEXEC before starting the jail); lists /proc/self/fd and also probes fds 3..1023 directly.
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include "probe.h"

int main(void) {
  DIR* d = opendir("/proc/self/fd");
  int own = d != NULL ? dirfd(d) : -1;
  for (struct dirent* e; d != NULL && (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.') continue;
    int fd = atoi(e->d_name);
    if (fd <= 2 || fd == own) continue;
    char path[64], target[512];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, target, sizeof target - 1);
    target[n > 0 ? n : 0] = 0;
    probe_report(1, "fd %d open in /proc/self/fd -> %s", fd, target);
  }
  if (d == NULL) probe_report(0, "/proc/self/fd: %s", strerror(errno));
  for (int fd = 3; fd < 1024; ++fd) {
    if (fd == own) continue;
    if (fcntl(fd, F_GETFD) >= 0) probe_report(1, "fd %d is open", fd);
  }
  if (d != NULL) closedir(d);
  if (probe_escaped_count == 0) probe_report(0, "only stdin, stdout and stderr are open");
  return probe_verdict();
}
