// SPDX-License-Identifier: BSD-3-Clause
// tmp_fill: writes 1 MiB blocks into DIR until the expected error (ENOSPC for a sized tmpfs, EFBIG
// for RLIMIT_FSIZE) stops it (held, before CAP MiB) or CAP is reached (escaped); removes its file.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "probe.h"

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) probe_usage("tmp_fill DIR CAP_MIB [ENOSPC|EFBIG]");
  int expected = argc == 4 && strcmp(argv[3], "EFBIG") == 0 ? EFBIG : ENOSPC;
  // RLIMIT_FSIZE sends SIGXFSZ first; ignored, the write fails with EFBIG instead.
  signal(SIGXFSZ, SIG_IGN);
  char path[4096];
  snprintf(path, sizeof path, "%s/cellgate-fill-%d", argv[1], getpid());
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    fprintf(stderr, "open %s: %s\n", path, strerror(errno));
    return PROBE_ERROR;
  }
  static char block[1 << 20];
  memset(block, 0x5a, sizeof block);
  long cap = atol(argv[2]);
  long mib = 0;
  int err = 0;
  for (; mib < cap; ++mib) {
    size_t off = 0;
    while (off < sizeof block) {
      ssize_t w = write(fd, block + off, sizeof block - off);
      if (w < 0) {
        err = errno;
        break;
      }
      off += (size_t)w;
    }
    if (err != 0) break;
  }
  close(fd);
  unlink(path);
  probe_report(err != expected, "wrote %ld MiB into %s: %s", mib, argv[1], err ? strerror(err) : "cap reached");
  return probe_verdict();
}
