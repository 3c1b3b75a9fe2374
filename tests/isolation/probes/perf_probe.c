// SPDX-License-Identifier: BSD-3-Clause
// perf_probe: tries perf_event_open(2) on itself (software clock) and system-wide.
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe.h"

int main(void) {
  struct perf_event_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.disabled = 1;
  long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
  probe_attempt("perf_event_open(self, sw cpu clock)", fd);
  if (fd >= 0) close((int)fd);
  fd = syscall(SYS_perf_event_open, &attr, -1, 0, -1, 0);
  probe_attempt("perf_event_open(all processes, cpu 0)", fd);
  if (fd >= 0) close((int)fd);
  return probe_verdict();
}
