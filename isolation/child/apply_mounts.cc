// SPDX-License-Identifier: BSD-3-Clause
// apply_mounts: executes the parent's mount plan, then pivot_root into the new root.
#include <errno.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/fd_io.h"
#include "isolation/child/child_steps.h"

namespace cellgate::isolation::child {
namespace {

int set_attr(const char* path, uint64_t attr_set, bool recursive) noexcept {
  if (attr_set == 0) return 0;
  mount_attr attr{};
  attr.attr_set = attr_set;
  unsigned flags = recursive ? AT_RECURSIVE : 0;
  return mount_setattr(AT_FDCWD, path, flags, &attr, sizeof attr) < 0 ? errno : 0;
}

int write_file(const MountOp& op, int open_flags) noexcept {
  int fd = open(op.target, open_flags, op.mode);
  if (fd < 0) return errno;
  int err = common::write_all(fd, op.data, op.data_len);
  if (err == 0 && op.owner >= 0 && fchown(fd, static_cast<uid_t>(op.owner),
                                          static_cast<gid_t>(op.owner)) < 0)
    err = errno;
  close(fd);
  return err;
}

int apply_op(const MountOp& op) noexcept {
  switch (op.type) {
    case MountOpType::kMkdir:
      if (mkdir(op.target, op.mode) < 0 && errno != EEXIST) return errno;
      if (op.owner >= 0 && lchown(op.target, static_cast<uid_t>(op.owner),
                                  static_cast<gid_t>(op.owner)) < 0)
        return errno;
      return 0;
    case MountOpType::kTouch: {
      int fd = open(op.target, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, op.mode);
      if (fd < 0) return errno;
      close(fd);
      return 0;
    }
    case MountOpType::kTmpfs:
      return mount("tmpfs", op.target, "tmpfs", op.flags, op.data) < 0 ? errno : 0;
    case MountOpType::kBind: {
      unsigned long flags = MS_BIND;
      if (op.recursive) flags |= MS_REC;
      if (mount(op.source, op.target, nullptr, flags, nullptr) < 0) return errno;
      return set_attr(op.target, op.attr_set, op.recursive);
    }
    case MountOpType::kProc:
      return mount("proc", op.target, "proc", op.flags, nullptr) < 0 ? errno : 0;
    case MountOpType::kDevpts:
      return mount("devpts", op.target, "devpts", op.flags, op.data) < 0 ? errno : 0;
    case MountOpType::kSymlink:
      return symlink(op.source, op.target) < 0 ? errno : 0;
    case MountOpType::kWriteFile:
      return write_file(op, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
    case MountOpType::kWriteExisting:
      return write_file(op, O_WRONLY | O_CLOEXEC);
    case MountOpType::kMoveTree: {
      int rc = move_mount(op.fd, "", AT_FDCWD, op.target, MOVE_MOUNT_F_EMPTY_PATH);
      int err = rc < 0 ? errno : 0;
      close(op.fd);
      return err;
    }
    case MountOpType::kSetAttr:
      return set_attr(op.target, op.attr_set, op.recursive);
  }
  return EINVAL;
}

}  // namespace

int apply_mounts(const MountOp* ops, size_t n, uint32_t* failed_index) noexcept {
  for (size_t i = 0; i < n; ++i) {
    int err = apply_op(ops[i]);
    if (err == ENOENT && ops[i].optional) continue;
    if (err != 0) {
      *failed_index = static_cast<uint32_t>(i);
      return err;
    }
  }
  return 0;
}

int apply_pivot_root(const char* new_root) noexcept {
  if (chdir(new_root) < 0) return errno;
  // pivot_root(".", "."): the old root ends up stacked on top of the new one at "/", so a
  // lazy unmount of "." removes it without needing a put_old directory (pivot_root(2) NOTES).
  if (syscall(SYS_pivot_root, ".", ".") < 0) return errno;
  if (umount2(".", MNT_DETACH) < 0) return errno;
  if (chdir("/") < 0) return errno;
  return 0;
}

int apply_remount_root_ro() noexcept {
  // Only the root tmpfs itself; /tmp, /dev/shm, /workspace and bind-same dirs are separate
  // mounts and keep their own (writable) flags because this is not AT_RECURSIVE.
  return set_attr("/", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, false);
}

}  // namespace cellgate::isolation::child
