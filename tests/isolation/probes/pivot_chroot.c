// SPDX-License-Identifier: BSD-3-Clause
// pivot_chroot: tries pivot_root (the nsjail '/','/' form), chroot and the classic chroot-escape
// (chroot into a subdir, then walk ".." past the new root), then umount of / and /proc.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe.h"

int main(int argc, char** argv) {
  if (argc != 3) probe_usage("pivot_chroot SCRATCH_PARENT CANARY_PATH");
  probe_private_mounts();
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/chroot-%d", argv[1], getpid());
  if (mkdir(dir, 0700) != 0) {
    fprintf(stderr, "mkdir %s: %s\n", dir, strerror(errno));
    return PROBE_ERROR;
  }
  if (chdir("/") != 0) return PROBE_ERROR;
  probe_attempt("pivot_root(/, /)", syscall(SYS_pivot_root, "/", "/"));
  probe_attempt("pivot_root(scratch, scratch)", syscall(SYS_pivot_root, dir, dir));
  int root_fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int rc = chroot(dir);
  probe_attempt("chroot into scratch dir", rc);
  if (rc == 0) {
    // Classic escape: cwd is outside the new root, so ".." walks up to the real one.
    for (int i = 0; i < 64; ++i) {
      if (chdir("..") != 0) break;
    }
    rc = chroot(".");
    int seen = access(argv[2], F_OK) == 0;
    probe_report(seen, "chroot escape: host canary %s %s", argv[2], seen ? "visible" : "absent");
    if (root_fd >= 0 && fchdir(root_fd) == 0) (void)chroot(".");
  }
  if (root_fd >= 0) close(root_fd);
  probe_attempt("umount2(/proc, MNT_DETACH)", umount2("/proc", MNT_DETACH));
  probe_attempt("umount2(/, MNT_DETACH)", umount2("/", MNT_DETACH));
  rmdir(dir);
  return probe_verdict();
}
