// SPDX-License-Identifier: BSD-3-Clause
// handle_probe: the "shocker" escape: open_by_handle_at(2) with a forged handle for inode 2 (the
// root directory of an ext4 fs), using a bind-mounted host directory (/usr) as the mount fd.

#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#include "probe.h"

int main(int argc, char** argv) {
  const char* mount_dir = argc > 1 ? argv[1] : "/usr";
  int mfd = open(mount_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (mfd < 0) {
    fprintf(stderr, "open %s: %s\n", mount_dir, strerror(errno));
    return PROBE_ERROR;
  }
  struct {
    struct file_handle fh;
    uint32_t ino_gen[2];
  } h;
  h.fh.handle_bytes = 8;
  h.fh.handle_type = 1;  // FILEID_INO32_GEN
  h.ino_gen[0] = 2;      // ext4 root inode
  h.ino_gen[1] = 0;
  int fd = open_by_handle_at(mfd, &h.fh, O_RDONLY | O_DIRECTORY);
  probe_attempt("open_by_handle_at(forged root inode)", fd);
  if (fd >= 0) close(fd);
  close(mfd);
  return probe_verdict();
}
