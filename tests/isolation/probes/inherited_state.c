// SPDX-License-Identifier: BSD-3-Clause
// inherited_state: per-process state a caller can leak into the kernel across exec: a personality
// (ADDR_NO_RANDOMIZE turns off ASLR, READ_IMPLIES_EXEC makes all memory executable) and an
// oom_score_adj of -1000 (the memory cgroup's OOM killer could then never kill the kernel).
#include "probe.h"

static long read_long(const char* path, int base) {
  FILE* f = fopen(path, "re");
  if (f == NULL) return -99999;
  char buf[64] = {0};
  if (fgets(buf, sizeof buf, f) == NULL) buf[0] = 0;
  fclose(f);
  return strtol(buf, NULL, base);
}

int main(void) {
  long persona = read_long("/proc/self/personality", 16);
  // 0x0040000 ADDR_NO_RANDOMIZE, 0x0400000 READ_IMPLIES_EXEC, 0x0200000 ADDR_COMPAT_LAYOUT
  probe_report(persona < 0 || (persona & 0x0640000) != 0, "personality %08lx (want no ASLR/exec flags)", persona);
  long adj = read_long("/proc/self/oom_score_adj", 10);
  probe_report(adj < 0, "oom_score_adj %ld (want >= 0)", adj);
  return probe_verdict();
}
