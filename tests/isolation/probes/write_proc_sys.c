// SPDX-License-Identifier: BSD-3-Clause
// write_proc_sys: tries to write host-global knobs in /proc. It writes back the value it read, and
// only opens /proc/sysrq-trigger (never writes it), so running it bare on a host changes nothing.
#include <fcntl.h>
#include <unistd.h>

#include "probe.h"

static void rewrite_same(const char* path) {
  char buf[512];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf);
  if (fd >= 0) close(fd);
  if (n <= 0) {
    probe_report(0, "read %s: %s", path, n < 0 ? strerror(errno) : "empty");
    n = 0;
  }
  fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    probe_report(0, "open %s for writing: %s", path, strerror(errno));
    return;
  }
  ssize_t w = n > 0 ? write(fd, buf, (size_t)n) : 0;
  close(fd);
  if (w < 0) {
    probe_report(0, "write %s: %s", path, strerror(errno));
  } else {
    probe_report(1, "opened %s for writing (wrote %zd bytes)", path, w);
  }
}

int main(void) {
  rewrite_same("/proc/sys/vm/overcommit_ratio");
  rewrite_same("/proc/sys/kernel/core_pattern");
  rewrite_same("/proc/sys/user/max_user_namespaces");
  rewrite_same("/proc/sys/net/ipv4/ip_forward");
  int fd = open("/proc/sysrq-trigger", O_WRONLY | O_CLOEXEC);
  if (fd >= 0) close(fd);
  probe_attempt("open /proc/sysrq-trigger for writing", fd);
  fd = open("/proc/sys/kernel/sysrq", O_WRONLY | O_CLOEXEC);
  if (fd >= 0) close(fd);
  probe_attempt("open /proc/sys/kernel/sysrq for writing", fd);
  return probe_verdict();
}
