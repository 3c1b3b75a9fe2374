// SPDX-License-Identifier: BSD-3-Clause
// write_files: tries to create a file in each directory given; a created file is removed and is an escape.
#include <fcntl.h>
#include <unistd.h>

#include "probe.h"

int main(int argc, char** argv) {
  if (argc < 2) probe_usage("write_files DIR...");
  for (int i = 1; i < argc; ++i) {
    char path[4096];
    snprintf(path, sizeof path, "%s/cellgate-probe-%d", argv[i], getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
      close(fd);
      unlink(path);
    }
    probe_attempt(path, fd);
  }
  return probe_verdict();
}
