// SPDX-License-Identifier: BSD-3-Clause
// mount_fs: tries mount(2) in its classic forms (tmpfs, bind of /, proc, remount of / read-write)
// and the new mount API (fsopen/fsmount/move_mount, open_tree), on a scratch dir it creates.
#include <fcntl.h>
#include <linux/mount.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe.h"

int main(int argc, char** argv) {
  if (argc != 2) probe_usage("mount_fs SCRATCH_PARENT");
  probe_private_mounts();
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/mnt-%d", argv[1], getpid());
  if (mkdir(dir, 0700) != 0) {
    fprintf(stderr, "mkdir %s: %s\n", dir, strerror(errno));
    return PROBE_ERROR;
  }
  int rc = mount("none", dir, "tmpfs", 0, "size=1m");
  probe_attempt("mount tmpfs", rc);
  if (rc == 0) umount2(dir, MNT_DETACH);
  rc = mount("/", dir, NULL, MS_BIND | MS_REC, NULL);
  probe_attempt("bind mount /", rc);
  if (rc == 0) umount2(dir, MNT_DETACH);
  rc = mount("proc", dir, "proc", 0, NULL);
  probe_attempt("mount proc", rc);
  if (rc == 0) umount2(dir, MNT_DETACH);
  rc = mount(NULL, "/usr", NULL, MS_REMOUNT | MS_BIND, NULL);
  probe_attempt("remount /usr read-write", rc);
  rc = mount(NULL, "/", NULL, MS_REC | MS_SHARED, NULL);
  probe_attempt("make / shared", rc);

  long fsfd = syscall(SYS_fsopen, "tmpfs", 0);
  probe_attempt("fsopen tmpfs", fsfd);
  if (fsfd >= 0) {
    long cfg = syscall(SYS_fsconfig, fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0);
    long mfd = cfg < 0 ? -1 : syscall(SYS_fsmount, fsfd, 0, 0);
    probe_attempt("fsmount tmpfs", mfd);
    if (mfd >= 0) {
      long mv = syscall(SYS_move_mount, mfd, "", AT_FDCWD, dir, MOVE_MOUNT_F_EMPTY_PATH);
      probe_attempt("move_mount tmpfs", mv);
      if (mv == 0) umount2(dir, MNT_DETACH);
      close((int)mfd);
    }
    close((int)fsfd);
  }
  long tree = syscall(SYS_open_tree, AT_FDCWD, "/", OPEN_TREE_CLONE | AT_RECURSIVE);
  probe_attempt("open_tree(OPEN_TREE_CLONE) of /", tree);
  if (tree >= 0) close((int)tree);
  rmdir(dir);
  return probe_verdict();
}
