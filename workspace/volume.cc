// SPDX-License-Identifier: BSD-3-Clause
// volume: every workspace tree in one loop-mounted btrfs image, each a subvolume with a live quota.
#include "workspace/volume.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/core.h>

#include "common/log.h"
#include "workspace/io_util.h"
#include "workspace/layout.h"
#include "workspace/loop_device.h"

namespace cellgate::workspace {
namespace {

using common::Errc;
using common::make_error;
using common::UniqueFd;

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kMinBytes = kGiB;  // mkfs.btrfs wants ~110 MiB; a workspace volume smaller than 1 GiB is no use

common::Error sys_error(const std::string& what, int err) {
  return make_error(Errc::kInternal, fmt::format("workspace volume: {}: {}", what, std::strerror(err)), err);
}

// Runs a tool (mkfs.btrfs) to completion with an empty environment but PATH; its output becomes
// the error message when it fails. Not a fork of this (threaded) process: posix_spawn.
common::Status run_tool(const std::vector<std::string>& argv) {
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return sys_error("pipe", errno);
  UniqueFd read_end(pipefd[0]), write_end(pipefd[1]);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, write_end.get(), 1);
  posix_spawn_file_actions_adddup2(&fa, write_end.get(), 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  char path_env[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
  char* env[] = {path_env, nullptr};
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, argv[0].c_str(), &fa, nullptr, args.data(), env);
  posix_spawn_file_actions_destroy(&fa);
  write_end.reset();
  if (rc != 0) return make_error(Errc::kInternal, fmt::format("workspace volume: cannot run {}: {}", argv[0], std::strerror(rc)), rc);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(read_end.get(), buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    if (out.size() < 4096) out.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return common::ok();
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return make_error(Errc::kInternal, fmt::format("workspace volume: {} failed: {}", argv[0], out));
}

// The image's file made `size` bytes long and sparse (ftruncate(2): it takes the host's disk as
// the volume's blocks are written, never more than `size`), then formatted. --nodiscard: there is
// nothing to discard in a new sparse file, and the TRIM of the whole device would only cost time.
common::Status make_image(const std::string& image, uint64_t size) {
  const std::string staged = image + ".new";
  ::unlink(staged.c_str());
  {
    UniqueFd fd(::open(staged.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd) return sys_error("create " + staged, errno);
    if (::ftruncate(fd.get(), static_cast<off_t>(size)) != 0) {
      int err = errno;
      ::unlink(staged.c_str());
      return sys_error(fmt::format("size {} to {} GiB", staged, size / kGiB), err);
    }
  }
  if (auto st = run_tool({"mkfs.btrfs", "-q", "-f", "--nodiscard", "-L", "cellgate-workspaces", staged}); !st) {
    ::unlink(staged.c_str());
    return st;
  }
  if (::rename(staged.c_str(), image.c_str()) != 0) return sys_error("rename " + staged, errno);
  return common::ok();
}

// What the sparse image may still take from the host's disk, against what that disk has free: said
// loudly at every start where the volume could outgrow it (the host's disk full under a loop device
// turns writes inside the volume into I/O errors for every tenant).
void warn_if_overcommitted(const std::string& data_dir, const std::string& image) {
  struct stat st {};
  struct statvfs fs {};
  if (::stat(image.c_str(), &st) != 0 || ::statvfs(data_dir.c_str(), &fs) != 0) return;
  const uint64_t size = static_cast<uint64_t>(st.st_size), held = static_cast<uint64_t>(st.st_blocks) * 512;
  const uint64_t may_take = size > held ? size - held : 0, free = uint64_t{fs.f_bavail} * fs.f_frsize;
  auto gib = [](uint64_t b) { return static_cast<double>(b) / static_cast<double>(kGiB); };
  if (may_take > free)
    common::log_warn("msg=\"the workspace volume can outgrow the host's free disk: give it a smaller "
                     "--workspace-volume-size or the disk more room\" image={} size_gib={:.1f} held_gib={:.1f} "
                     "host_free_gib={:.1f}",
                     image, gib(size), gib(held), gib(free));
}

bool empty_dir(const std::string& path) {
  auto names = list_dir_at(AT_FDCWD, path, 1);
  return names && names->empty();
}

}  // namespace

std::string Volume::image_path(const std::string& data_dir) { return data_dir + "/workspaces.img"; }

bool Volume::is_mounted(const std::string& data_dir) {
  UniqueFd fd(::open(workspaces_dir(data_dir).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd || !btrfs::is_btrfs(fd.get())) return false;
  auto dev = btrfs::device_path(fd.get());
  if (!dev) return false;
  // The mount's root is the file system's top (not a dir in some other btrfs) on our image's device.
  struct stat st {};
  return ::fstat(fd.get(), &st) == 0 && st.st_ino == 256 && dev.value() == find_loop_device(image_path(data_dir));
}

common::Result<std::unique_ptr<Volume>> Volume::open(const std::string& data_dir, uint64_t size_bytes) {
  std::unique_ptr<Volume> v(new Volume());
  v->image_ = image_path(data_dir);
  v->mount_point_ = workspaces_dir(data_dir);
  for (const auto& d : {data_dir, v->mount_point_}) {
    if (::mkdir(d.c_str(), 0711) != 0 && errno != EEXIST) return sys_error("mkdir " + d, errno);
  }
  // One opener at a time sets it up (two must never attach one image twice); each holds a second
  // lock shared while it lives, so that release() never unmounts it under another.
  auto lock = [](const std::string& path, int op) -> common::Result<UniqueFd> {
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd) return sys_error("open " + path, errno);
    while (::flock(fd.get(), op) != 0) {
      if (errno != EINTR) return sys_error("lock " + path, errno);
    }
    return fd;
  };
  auto setup = lock(data_dir + "/workspaces.lock", LOCK_EX);
  if (!setup) return setup.error();
  auto in_use = lock(data_dir + "/workspaces.users", LOCK_SH);
  if (!in_use) return in_use.error();
  v->lock_ = std::move(in_use.value());
  struct stat st {};
  const bool have_image = ::stat(v->image_.c_str(), &st) == 0;
  uint64_t want = size_bytes != 0 ? size_bytes : have_image ? static_cast<uint64_t>(st.st_size) : kDefaultBytes;
  if (want < kMinBytes) return make_error(Errc::kBadRequest, fmt::format("workspace volume: {} bytes is too small (at least 1 GiB)", want));
  bool grown = false;
  if (!is_mounted(data_dir)) {
    if (!empty_dir(v->mount_point_))
      return make_error(Errc::kConflict, v->mount_point_ + " holds workspaces made without a volume (move them away)");
    std::string dev = find_loop_device(v->image_);
    if (!have_image) {
      if (auto s = make_image(v->image_, want); !s) return s.error();
    } else if (want > static_cast<uint64_t>(st.st_size) && dev.empty()) {
      UniqueFd fd(::open(v->image_.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
      if (!fd || ::ftruncate(fd.get(), static_cast<off_t>(want)) != 0) return sys_error("grow " + v->image_, errno);
      grown = true;
    }
    // A device still attached is the file system that kernels of an earlier gateway still use:
    // mounting that device again mounts the same file system, where a second device would not.
    LoopDevice loop;
    if (!dev.empty()) {
      loop.path = dev;
      loop.fd.reset(::open(dev.c_str(), O_RDONLY | O_CLOEXEC));
    } else {
      auto attached = attach_loop_device(v->image_);
      if (!attached) return attached.error();
      loop = std::move(attached.value());
    }
    // discard=async: blocks the volume frees (files deleted, subvolumes dropped) are punched out of
    // the image again in the background, so that it holds about what the workspaces hold.
    if (::mount(loop.path.c_str(), v->mount_point_.c_str(), "btrfs", MS_NOSUID | MS_NODEV | MS_NOATIME, "discard=async") != 0)
      return sys_error(fmt::format("mount {} ({}) on {}", loop.path, v->image_, v->mount_point_), errno);
    v->mounted_here_ = true;
    common::log_info("msg=\"workspace volume mounted\" image={} device={} size_gib={}", v->image_, loop.path,
                     want / kGiB);
  }
  UniqueFd top(::open(v->mount_point_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!top) return sys_error("open " + v->mount_point_, errno);
  if (auto q = btrfs::enable_quota(top.get()); !q) return q.error();
  if (grown) {
    if (auto g = btrfs::grow_to_device(top.get()); !g) return g.error();
  }
  if (::stat(v->image_.c_str(), &st) == 0) v->size_bytes_ = static_cast<uint64_t>(st.st_size);
  warn_if_overcommitted(data_dir, v->image_);
  ::chmod(v->mount_point_.c_str(), 0711);
  return v;
}

common::Result<std::unique_ptr<Volume>> Volume::open_existing(const std::string& data_dir) {
  if (::access(image_path(data_dir).c_str(), F_OK) != 0) return std::unique_ptr<Volume>();
  return open(data_dir, 0);
}

common::Status Volume::make_tree(int parent_fd, const std::string& name, uint64_t max_bytes, int uid, int gid) const {
  if (auto st = btrfs::create_subvolume(parent_fd, name); !st) return st;
  auto fail = [&](common::Error e) -> common::Status {
    (void)btrfs::destroy_subvolume(parent_fd, name);
    return e;
  };
  UniqueFd tree(::openat(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!tree) return fail(sys_error("open " + name, errno));
  if (auto st = btrfs::set_limit(tree.get(), max_bytes); !st) return fail(st.error());
  if ((uid >= 0 || gid >= 0) && ::fchown(tree.get(), static_cast<uid_t>(uid), static_cast<gid_t>(gid)) != 0)
    return fail(sys_error("chown " + name, errno));
  if (::fchmod(tree.get(), 0755) != 0) return fail(sys_error("chmod " + name, errno));
  return common::ok();
}

common::Status Volume::set_limit(const std::string& tree, uint64_t max_bytes) const {
  UniqueFd fd(::open(tree.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return sys_error("open " + tree, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || st.st_ino != 256) return make_error(Errc::kBadRequest, tree + " is not a quota tree");
  return btrfs::set_limit(fd.get(), max_bytes);
}

common::Result<btrfs::Usage> Volume::usage(const std::string& tree) const {
  UniqueFd fd(::open(tree.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return sys_error("open " + tree, errno);
  return btrfs::usage(fd.get());
}

namespace {
common::Result<uint64_t> owner_group(int owner_fd) {
  struct stat st {};
  if (::fstat(owner_fd, &st) != 0) return sys_error("stat an owner dir", errno);
  return btrfs::group_qgroup(static_cast<uint64_t>(st.st_ino));
}
}  // namespace

common::Status Volume::group_tree(int tree_fd, int owner_fd, uint64_t max_bytes) const {
  auto group = owner_group(owner_fd);
  if (!group) return group.error();
  auto id = btrfs::subvolume_id(tree_fd);
  if (!id) return id.error();
  return btrfs::join_group(owner_fd, *id, *group, max_bytes);
}

common::Result<btrfs::Usage> Volume::group_usage(int owner_fd) const {
  auto group = owner_group(owner_fd);
  if (!group) return group.error();
  return btrfs::qgroup_usage(owner_fd, *group);
}

common::Status Volume::remove_tree(int parent_fd, const std::string& name) const {
  struct stat st {};
  if (::fstatat(parent_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) || st.st_ino != 256)
    return common::ok();
  return btrfs::destroy_subvolume(parent_fd, name);
}

void Volume::release() {
  // Upgrading our shared lock fails while another opener holds one (and then leaves us without it,
  // flock(2): fine, releasing is the last thing an opener does).
  if (!lock_ || ::flock(lock_.get(), LOCK_EX | LOCK_NB) != 0) {
    common::log_info("msg=\"workspace volume stays mounted: another process uses it\" dir={}", mount_point_);
    return;
  }
  if (::umount2(mount_point_.c_str(), UMOUNT_NOFOLLOW) == 0)
    common::log_info("msg=\"workspace volume unmounted\" dir={}", mount_point_);
  else if (errno != EINVAL)
    common::log_info("msg=\"workspace volume stays mounted\" dir={} reason=\"{}\"", mount_point_, std::strerror(errno));
}

}  // namespace cellgate::workspace
