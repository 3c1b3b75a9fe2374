// SPDX-License-Identifier: BSD-3-Clause
// priority_probe: a kernel must not starve the host: real-time and deadline scheduling, negative
// nice, real-time I/O priority and CPU affinity beyond its cpuset all need privileges it lacks.
// Every call only touches the probe itself.
#include <linux/ioprio.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe.h"

int main(void) {
  struct sched_param sp = {.sched_priority = 1};
  probe_attempt("sched_setscheduler(SCHED_FIFO, 1)", sched_setscheduler(0, SCHED_FIFO, &sp));
  probe_attempt("sched_setscheduler(SCHED_RR, 1)", sched_setscheduler(0, SCHED_RR, &sp));
  errno = 0;
  int rc = setpriority(PRIO_PROCESS, 0, -5);
  probe_attempt("setpriority(-5)", rc);
  probe_attempt("ioprio_set(IOPRIO_CLASS_RT)",
                syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, IOPRIO_PRIO_VALUE(IOPRIO_CLASS_RT, 0)));
  struct rlimit rl;
  getrlimit(RLIMIT_RTPRIO, &rl);
  probe_report(rl.rlim_max != 0, "RLIMIT_RTPRIO hard limit %llu (want 0)", (unsigned long long)rl.rlim_max);
  return probe_verdict();
}
