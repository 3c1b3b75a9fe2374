// SPDX-License-Identifier: BSD-3-Clause
// userfaultfd_probe: tries userfaultfd(2) and /dev/userfaultfd (race-widening primitive for exploits).
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe.h"

int main(void) {
  long fd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
  int err = errno;
  int not_built = fd < 0 && probe_not_in_kernel(err);
  errno = err;
  probe_attempt("userfaultfd(0)", fd);
  if (fd >= 0) close((int)fd);
  int dfd = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
  if (dfd < 0 && errno == ENOENT && not_built) {
    probe_unavailable("open /dev/userfaultfd: no userfaultfd in this kernel (CONFIG_USERFAULTFD=n)");
  } else {
    probe_attempt("open /dev/userfaultfd", dfd);
  }
  if (dfd >= 0) close(dfd);
  return probe_verdict();
}
