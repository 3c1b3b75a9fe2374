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
  probe_attempt("io_uring_setup(4)", fd);
  if (fd >= 0) close((int)fd);
  return probe_verdict();
}
