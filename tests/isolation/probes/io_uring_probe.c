// SPDX-License-Identifier: BSD-3-Clause
// io_uring_probe: tries io_uring_setup(2) (a large, often-exploited kernel surface).
#include <linux/io_uring.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe.h"

int main(void) {
  struct io_uring_params params;
  memset(&params, 0, sizeof params);
  long fd = syscall(SYS_io_uring_setup, 4, &params);
  int err = errno;
  // kernel.io_uring_disabled=2 (Linux 6.6) refuses io_uring to every process, root included, with
  // EPERM: a door this host does not have. Unfiltered, that EPERM can only be the sysctl's.
  if (fd < 0 && err == EPERM && probe_seccomp_mode() == 0 &&
      probe_read_long("/proc/sys/kernel/io_uring_disabled") == 2) {
    probe_unavailable("io_uring_setup(4): io_uring is disabled on this host (kernel.io_uring_disabled=2)");
    return probe_verdict();
  }
  errno = err;
  probe_attempt("io_uring_setup(4)", fd);
  if (fd >= 0) close((int)fd);
  return probe_verdict();
}
