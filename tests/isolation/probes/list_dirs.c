// SPDX-License-Identifier: BSD-3-Clause
// list_dirs: tries to list host directories; seeing the given canary name in one is an escape.
#include <dirent.h>

#include "probe.h"

int main(int argc, char** argv) {
  if (argc < 3) probe_usage("list_dirs CANARY_NAME DIR...");
  const char* canary = argv[1];
  for (int i = 2; i < argc; ++i) {
    DIR* d = opendir(argv[i]);
    if (d == NULL) {
      probe_report(0, "opendir %s: %s", argv[i], strerror(errno));
      continue;
    }
    int seen = 0;
    for (struct dirent* e; (e = readdir(d)) != NULL;) {
      if (strcmp(e->d_name, canary) == 0) seen = 1;
    }
    closedir(d);
    probe_report(seen, "list %s: canary %s", argv[i], seen ? "visible" : "absent");
  }
  return probe_verdict();
}
