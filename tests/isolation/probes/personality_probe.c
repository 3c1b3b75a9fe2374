// SPDX-License-Identifier: BSD-3-Clause
// personality_probe: tries personality(READ_IMPLIES_EXEC) and ADDR_NO_RANDOMIZE (weakens W^X / ASLR).
#include <sys/personality.h>

#include "probe.h"

static void try_persona(const char* what, unsigned long bit) {
  int rc = personality(PER_LINUX | bit);
  int now = personality(0xffffffff);
  // Success only counts if the bit really stuck (a query may itself be denied: then rc tells).
  if (rc < 0) {
    probe_report(0, "personality(%s): %s", what, strerror(errno));
  } else if (now >= 0 && (now & (int)bit) == 0) {
    probe_report(0, "personality(%s) returned but the bit is not set", what);
  } else {
    probe_report(1, "personality(%s) set", what);
  }
  personality(PER_LINUX);
}

int main(void) {
  try_persona("READ_IMPLIES_EXEC", READ_IMPLIES_EXEC);
  try_persona("ADDR_NO_RANDOMIZE", ADDR_NO_RANDOMIZE);
  return probe_verdict();
}
