// SPDX-License-Identifier: BSD-3-Clause
// attach_workspace: mount a workspace into a running jail from the host side.
#include "isolation/attach_workspace.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "common/unique_fd.h"
#include "isolation/etc_secrets.h"
#include "isolation/host_dirs.h"
#include "isolation/join_target.h"
#include "isolation/mount_plan.h"

namespace cellgate::isolation {
namespace {

int failed(const std::string& what, int err = 0) {
  std::fprintf(stderr, "cellgate-jail: attach-workspace: %s%s%s\n", what.c_str(), err ? ": " : "",
               err ? std::strerror(err) : "");
  return 126;
}

// The pooled jail's /workspace is the tmpfs the jail made for want of a workspace.
bool placeholder(const char* path) {
  struct statfs st {};
  return ::statfs(path, &st) == 0 && static_cast<int64_t>(st.f_type) == TMPFS_MAGIC;
}

bool alive(int pidfd) { return ::syscall(SYS_pidfd_send_signal, pidfd, 0, nullptr, 0) == 0; }

}  // namespace

int attach_workspace(const std::string& status_file, const std::string& workspace) {
  auto target = open_join_target(status_file);
  if (!target) return failed(target.error().message);
  const pid_t init = target->status.init_pid;
  const std::string ns_dir = "/proc/" + std::to_string(init) + "/ns/";
  common::UniqueFd userns(::open((ns_dir + "user").c_str(), O_RDONLY | O_CLOEXEC));
  common::UniqueFd mntns(::open((ns_dir + "mnt").c_str(), O_RDONLY | O_CLOEXEC));
  if (!userns || !mntns) return failed("open the jail's namespaces", errno);
  // The init's pidfd was validated; still alive after the opens, so the pid was not reused in between.
  if (!alive(target->init_pidfd.get())) return failed("the jail ended");

  // Once only (checked again from inside below): nothing on the host is touched for a jail that
  // already has its workspace.
  if (!placeholder(("/proc/" + std::to_string(init) + "/root/workspace").c_str()))
    return failed("/workspace in the jail is not the placeholder");
  if (std::string_view secret = overlapping_secret(workspace); !secret.empty())
    return failed(workspace + " would bring " + std::string(secret) + " into the jail: host secrets are never bound");
  common::UniqueFd dir = open_dir_no_symlinks(workspace);
  if (!dir && errno == ELOOP) return failed(workspace + " passes through a symlink (refused)");
  if (!dir) return failed("open " + workspace, errno);
  if (may_hand_over(dir.get(), false)) chown_tree_top(dir.get(), false, {0}, kSandboxId);
  common::UniqueFd tree(static_cast<int>(
      ::open_tree(dir.get(), "", AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE)));
  if (!tree) return failed("open_tree " + workspace, errno);
  // The jail's own workspace gets the same attributes (Jail::idmap_or_chown): on-disk 1000 is
  // `sandbox` inside whatever uid slot the jail has.
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  attr.userns_fd = static_cast<uint64_t>(userns.get());
  if (::mount_setattr(tree.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) != 0) {
    // A file system without idmapped mounts: hand the dir to this jail's host uid instead.
    mount_attr plain{};
    plain.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    if (::mount_setattr(tree.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, &plain, sizeof plain) != 0)
      return failed("mount_setattr", errno);
    chown_tree_top(dir.get(), false, {kSandboxId}, static_cast<uid_t>(target->status.host_uid));
  }

  if (::setns(mntns.get(), CLONE_NEWNS) != 0) return failed("setns into the jail's mount namespace", errno);
  // Once only: a jail whose /workspace already is a real workspace keeps it.
  if (!placeholder("/workspace")) return failed("/workspace in the jail is not the placeholder");
  if (::move_mount(tree.get(), "", AT_FDCWD, "/workspace", MOVE_MOUNT_F_EMPTY_PATH) != 0)
    return failed("move_mount onto /workspace", errno);
  return 0;
}

}  // namespace cellgate::isolation
