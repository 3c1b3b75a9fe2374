// SPDX-License-Identifier: BSD-3-Clause
// stdio_reopen: re-opens its stdio through /proc/self/fd/N for reading (a magic link: only the
// file's permissions are checked, not the fd's write-only mode) and looks for a host secret there.
#include <fcntl.h>
#include <unistd.h>

#include "probe.h"

int main(int argc, char** argv) {
  if (argc != 2) probe_usage("stdio_reopen SECRET");
  for (int n = 0; n <= 2; ++n) {
    char path[32], target[512];
    snprintf(path, sizeof path, "/proc/self/fd/%d", n);
    ssize_t len = readlink(path, target, sizeof target - 1);
    target[len > 0 ? len : 0] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      probe_report(0, "reopen fd %d (%s) for reading: %s", n, target, strerror(errno));
      continue;
    }
    static char buf[1 << 16];
    ssize_t got = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[got > 0 ? got : 0] = 0;
    int leak = got > 0 && strstr(buf, argv[1]) != NULL;
    probe_report(leak, "reopen fd %d (%s) for reading: %zd bytes, secret %s", n, target, got,
                 leak ? "present" : "absent");
  }
  return probe_verdict();
}
