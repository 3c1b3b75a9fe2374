// SPDX-License-Identifier: BSD-3-Clause
// signal_state: the kernel starts with default signal dispositions and an empty signal mask, whatever
// its caller ignored or blocked (an inherited SIG_IGN for SIGINT makes Python skip its
// KeyboardInterrupt handler: interrupts would silently stop working).
#include <unistd.h>

#include "probe.h"

static unsigned long long field(const char* status, const char* name) {
  const char* at = strstr(status, name);
  return at != NULL ? strtoull(at + strlen(name), NULL, 16) : ~0ULL;
}

int main(void) {
  FILE* f = fopen("/proc/self/status", "re");
  if (f == NULL) return PROBE_ERROR;
  static char status[16384];
  size_t n = fread(status, 1, sizeof status - 1, f);
  status[n] = 0;
  fclose(f);
  unsigned long long ign = field(status, "\nSigIgn:\t");
  unsigned long long blk = field(status, "\nSigBlk:\t");
  probe_report(ign != 0, "ignored signals mask %016llx (want 0)", ign);
  probe_report(blk != 0, "blocked signals mask %016llx (want 0)", blk);
  return probe_verdict();
}
