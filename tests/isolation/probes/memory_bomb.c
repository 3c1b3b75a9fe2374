// SPDX-License-Identifier: BSD-3-Clause
// memory_bomb: touches 16 MiB chunks up to CAP MiB. Held = killed (by the memory cgroup's OOM
// killer) before reaching CAP; reaching CAP and exiting is an escape.
#include <stdlib.h>
#include <unistd.h>

#include "probe.h"

int main(int argc, char** argv) {
  if (argc != 2) probe_usage("memory_bomb CAP_MIB");
  long cap = atol(argv[1]);
  const size_t chunk = 16u << 20;
  long got = 0;
  for (; got < cap; got += 16) {
    char* p = malloc(chunk);
    if (p == NULL) {
      probe_report(0, "malloc failed at %ld MiB", got);
      return probe_verdict();
    }
    memset(p, 0x5a, chunk);
  }
  probe_report(1, "touched %ld MiB without being stopped", got);
  return probe_verdict();
}
