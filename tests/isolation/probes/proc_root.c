// SPDX-License-Identifier: BSD-3-Clause
// proc_root: the /proc/<pid>/root and /proc/<pid>/cwd magic links, tried toward a host canary file.
#include <fcntl.h>
#include <unistd.h>

#include "probe.h"

static void try_open(const char* path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) close(fd);
  probe_attempt(path, fd);
}

int main(int argc, char** argv) {
  if (argc != 3) probe_usage("proc_root HOST_CANARY_PATH HOST_PID");
  const char* canary = argv[1];
  const char* prefixes[] = {"/proc/1/root", "/proc/self/root", "/proc/2/root", "/proc/1/cwd/../../..",
                            "/proc/1/root/proc/1/root"};
  char path[4096];
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; ++i) {
    snprintf(path, sizeof path, "%s%s", prefixes[i], canary);
    try_open(path);
  }
  snprintf(path, sizeof path, "/proc/%s/root%s", argv[2], canary);
  try_open(path);
  snprintf(path, sizeof path, "/proc/%s/root/etc/shadow", argv[2]);
  try_open(path);
  return probe_verdict();
}
