// SPDX-License-Identifier: BSD-3-Clause
// sched_inherit: the kernel must not inherit a real-time policy, a negative nice value or a
// real-time I/O class from whoever started the helper (a kernel spinning at SCHED_FIFO starves the host).
#include <linux/ioprio.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe.h"

int main(void) {
  int policy = sched_getscheduler(0) & ~SCHED_RESET_ON_FORK;
  int rt = policy == SCHED_FIFO || policy == SCHED_RR || policy == 6 /* SCHED_DEADLINE */;
  probe_report(rt, "scheduling policy %d (want SCHED_OTHER/BATCH/IDLE)", policy);
  errno = 0;
  int nice = getpriority(PRIO_PROCESS, 0);
  probe_report(errno == 0 && nice < 0, "nice %d (want >= 0)", nice);
  long io = syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0);
  probe_report(io >= 0 && IOPRIO_PRIO_CLASS(io) == IOPRIO_CLASS_RT, "I/O priority class %ld", io >= 0 ? (long)IOPRIO_PRIO_CLASS(io) : -1L);
  return probe_verdict();
}
