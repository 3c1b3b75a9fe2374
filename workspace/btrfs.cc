// SPDX-License-Identifier: BSD-3-Clause
// btrfs: the few btrfs ioctls a workspace volume needs: subvolumes, quotas, limits, usage, resize.
#include "workspace/btrfs.h"

#include <fcntl.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/core.h>

#include "common/log.h"
#include "common/unique_fd.h"
#include "workspace/io_util.h"

// Linux 6.7 (Debian 12's headers are 6.1).
#ifndef BTRFS_QUOTA_CTL_ENABLE_SIMPLE_QUOTA
#define BTRFS_QUOTA_CTL_ENABLE_SIMPLE_QUOTA 4
#endif

namespace cellgate::workspace::btrfs {
namespace {

using common::Errc;
using common::make_error;

common::Error fail(const std::string& what, int err) {
  return make_error(Errc::kInternal, fmt::format("btrfs: {}: {}", what, std::strerror(err)), err);
}

common::Status name_args(const std::string& name, btrfs_ioctl_vol_args& args) {
  if (name.empty() || name.size() >= sizeof args.name || name.find('/') != std::string::npos)
    return make_error(Errc::kBadRequest, "btrfs: bad subvolume name");
  std::memset(&args, 0, sizeof args);
  std::memcpy(args.name, name.data(), name.size());
  return common::ok();
}

// A small sysfs file's number.
uint64_t read_number(const std::string& path, bool& ok) {
  auto text = read_file_at(AT_FDCWD, path, 64);
  ok = text.has_value();
  return ok ? std::strtoull(text->c_str(), nullptr, 10) : 0;
}

}  // namespace

bool is_btrfs(int fd) {
  struct statfs st {};
  return ::fstatfs(fd, &st) == 0 && st.f_type == BTRFS_SUPER_MAGIC;
}

common::Status enable_quota(int mount_fd) {
  btrfs_ioctl_quota_ctl_args args{};
  args.cmd = BTRFS_QUOTA_CTL_ENABLE_SIMPLE_QUOTA;
  if (::ioctl(mount_fd, BTRFS_IOC_QUOTA_CTL, &args) == 0) return common::ok();
  // EINVAL: a kernel before 6.7 (no simple quotas), or quotas of the other kind already on.
  args = btrfs_ioctl_quota_ctl_args{};
  args.cmd = BTRFS_QUOTA_CTL_ENABLE;
  if (::ioctl(mount_fd, BTRFS_IOC_QUOTA_CTL, &args) == 0) return common::ok();
  return fail("enable quotas", errno);
}

common::Status create_subvolume(int parent_fd, const std::string& name) {
  btrfs_ioctl_vol_args args;
  if (auto st = name_args(name, args); !st) return st;
  if (::ioctl(parent_fd, BTRFS_IOC_SUBVOL_CREATE, &args) != 0) {
    int err = errno;
    if (err == EEXIST) return make_error(Errc::kConflict, "btrfs: " + name + " exists", err);
    return fail("create subvolume " + name, err);
  }
  return common::ok();
}

common::Result<uint64_t> subvolume_id(int fd) {
  btrfs_ioctl_ino_lookup_args args{};
  args.objectid = BTRFS_FIRST_FREE_OBJECTID;
  if (::ioctl(fd, BTRFS_IOC_INO_LOOKUP, &args) != 0) return fail("subvolume id", errno);
  return static_cast<uint64_t>(args.treeid);
}

common::Status destroy_subvolume(int parent_fd, const std::string& name) {
  common::UniqueFd sub(::openat(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  auto id = sub ? subvolume_id(sub.get()) : common::Result<uint64_t>(fail("open " + name, errno));
  sub.reset();
  btrfs_ioctl_vol_args args;
  if (auto st = name_args(name, args); !st) return st;
  if (::ioctl(parent_fd, BTRFS_IOC_SNAP_DESTROY, &args) != 0) return fail("delete subvolume " + name, errno);
  if (id) {
    // Refused (EBUSY) while the cleaner still frees the subvolume's extents: the qgroup then
    // stays as a stale entry of a few bytes (`btrfs qgroup clear-stale` removes those).
    btrfs_ioctl_qgroup_create_args q{};
    q.create = 0;
    q.qgroupid = *id;
    (void)::ioctl(parent_fd, BTRFS_IOC_QGROUP_CREATE, &q);
  }
  return common::ok();
}

common::Status set_limit(int subvol_fd, uint64_t max_bytes) {
  btrfs_ioctl_qgroup_limit_args args{};
  args.qgroupid = 0;  // the subvolume of subvol_fd
  args.lim.flags = BTRFS_QGROUP_LIMIT_MAX_RFER;
  // (u64)-1 is "no limit" to btrfs (what `btrfs qgroup limit none` sets).
  args.lim.max_rfer = max_bytes == 0 ? ~uint64_t{0} : max_bytes;
  if (::ioctl(subvol_fd, BTRFS_IOC_QGROUP_LIMIT, &args) != 0) return fail("set the quota", errno);
  return common::ok();
}

common::Status join_group(int fd, uint64_t subvol_id, uint64_t group, uint64_t max_bytes) {
  btrfs_ioctl_qgroup_create_args create{};
  create.create = 1;
  create.qgroupid = group;
  if (::ioctl(fd, BTRFS_IOC_QGROUP_CREATE, &create) != 0 && errno != EEXIST) return fail("create a qgroup", errno);
  btrfs_ioctl_qgroup_assign_args assign{};
  assign.assign = 1;
  assign.src = subvol_id;
  assign.dst = group;
  // A positive return: the kernel could not carry the member's bytes over to the group and marked the
  // accounting inconsistent (only when the member shares extents with others; ours share none: no
  // snapshots, no reflinks between workspaces, and simple quotas count an extent once, to its writer).
  const int rc = ::ioctl(fd, BTRFS_IOC_QGROUP_ASSIGN, &assign);
  if (rc < 0 && errno != EEXIST) return fail("put a subvolume's qgroup in its group", errno);
  if (rc > 0) common::log_warn("msg=\"btrfs: qgroup accounting marked inconsistent by an assign\" group={}", group);
  btrfs_ioctl_qgroup_limit_args limit{};
  limit.qgroupid = group;
  limit.lim.flags = BTRFS_QGROUP_LIMIT_MAX_RFER;
  limit.lim.max_rfer = max_bytes == 0 ? ~uint64_t{0} : max_bytes;
  if (::ioctl(fd, BTRFS_IOC_QGROUP_LIMIT, &limit) != 0) return fail("set a group's quota", errno);
  return common::ok();
}

common::Result<Usage> usage(int subvol_fd) {
  auto id = subvolume_id(subvol_fd);
  if (!id) return id.error();
  return qgroup_usage(subvol_fd, *id);
}

common::Result<Usage> qgroup_usage(int fd, uint64_t qgroup) {
  btrfs_ioctl_fs_info_args info{};
  if (::ioctl(fd, BTRFS_IOC_FS_INFO, &info) != 0) return fail("fs info", errno);
  std::string fsid;
  for (size_t i = 0; i < BTRFS_FSID_SIZE; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) fsid += '-';
    fsid += fmt::format("{:02x}", info.fsid[i]);
  }
  const std::string dir = fmt::format("/sys/fs/btrfs/{}/qgroups/{}_{}/", fsid, qgroup >> 48, qgroup & ((uint64_t{1} << 48) - 1));
  bool ok = false;
  Usage u;
  u.referenced = read_number(dir + "referenced", ok);
  if (!ok) return make_error(Errc::kUnavailable, "btrfs: no quota information in " + dir);
  u.limit = read_number(dir + "max_referenced", ok);
  if (u.limit == ~uint64_t{0}) u.limit = 0;
  return u;
}

common::Result<std::string> device_path(int fd) {
  btrfs_ioctl_fs_info_args info{};
  if (::ioctl(fd, BTRFS_IOC_FS_INFO, &info) != 0) return fail("fs info", errno);
  if (info.num_devices != 1) return make_error(Errc::kBadRequest, "btrfs: more than one device");
  for (uint64_t devid = 1; devid <= info.max_id; ++devid) {
    btrfs_ioctl_dev_info_args dev{};
    dev.devid = devid;
    if (::ioctl(fd, BTRFS_IOC_DEV_INFO, &dev) == 0) return std::string(reinterpret_cast<const char*>(dev.path));
    if (errno != ENODEV) return fail("device info", errno);
  }
  return make_error(Errc::kNotFound, "btrfs: no device");
}

common::Status grow_to_device(int mount_fd) {
  btrfs_ioctl_vol_args args;
  if (auto st = name_args("max", args); !st) return st;
  if (::ioctl(mount_fd, BTRFS_IOC_RESIZE, &args) != 0) return fail("resize", errno);
  return common::ok();
}

}  // namespace cellgate::workspace::btrfs
