// SPDX-License-Identifier: BSD-3-Clause
// mknod_dev: tries to create device nodes (a disk, /dev/mem, a fifo is fine) in every writable place.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "probe.h"

static void try_node(const char* dir, const char* name, mode_t type, dev_t dev) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s-%d", dir, name, getpid());
  int rc = mknod(path, type | 0600, dev);
  if (rc == 0) unlink(path);
  probe_attempt(path, rc);
}

int main(int argc, char** argv) {
  if (argc < 2) probe_usage("mknod_dev DIR...");
  for (int i = 1; i < argc; ++i) {
    try_node(argv[i], "sda", S_IFBLK, makedev(8, 0));
    try_node(argv[i], "mem", S_IFCHR, makedev(1, 1));
    try_node(argv[i], "null", S_IFCHR, makedev(1, 3));
  }
  return probe_verdict();
}
