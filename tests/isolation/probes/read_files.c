// SPDX-License-Identifier: BSD-3-Clause
// read_files: tries to read each host path given (secrets, canaries); any successful read is an escape.
#include <fcntl.h>
#include <unistd.h>

#include "probe.h"

int main(int argc, char** argv) {
  if (argc < 2) probe_usage("read_files PATH...");
  for (int i = 1; i < argc; ++i) {
    int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      probe_report(0, "open %s: %s", argv[i], strerror(errno));
      continue;
    }
    char buf[64];
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    // A directory opens fine but cannot be read; only listing it (below) would leak.
    if (n < 0 && errno == EISDIR) {
      probe_report(0, "open %s: a directory, not a file (listing is probe list_dirs)", argv[i]);
      continue;
    }
    probe_report(1, "read %s (%zd bytes)", argv[i], n);
  }
  return probe_verdict();
}
