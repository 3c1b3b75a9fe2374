// SPDX-License-Identifier: BSD-3-Clause
// btrfs: the few btrfs ioctls a workspace volume needs: subvolumes, quotas, limits, usage, resize.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"

namespace cellgate::workspace::btrfs {

// Whether fd is on a btrfs file system (statfs).
bool is_btrfs(int fd);
// Turns quotas on for the file system of mount_fd: simple quotas (Linux 6.7+: an extent is charged
// to the subvolume that wrote it, at write time, without the backref walks of full qgroups) when the
// kernel has them, else full qgroups. Already on: nothing to do.
common::Status enable_quota(int mount_fd);
// Creates subvolume `name` in the directory parent_fd (mode 0755, root-owned, like mkdir).
common::Status create_subvolume(int parent_fd, const std::string& name);
// Deletes subvolume `name` of parent_fd with everything in it (O(1) for us: the file system's
// cleaner frees its extents later), then its qgroup (best effort).
common::Status destroy_subvolume(int parent_fd, const std::string& name);
// The id of the subvolume fd is in (BTRFS_IOC_INO_LOOKUP).
common::Result<uint64_t> subvolume_id(int fd);
// Limits what the subvolume of subvol_fd may hold (referenced bytes; data and metadata): past it a
// write fails with EDQUOT. 0 removes the limit.
common::Status set_limit(int subvol_fd, uint64_t max_bytes);

// A level-1 qgroup ("1/n"): a group of subvolumes' qgroups whose limit holds for what they hold
// together, checked at every write's reservation like a subvolume's own (btrfs-qgroup(8)).
constexpr uint64_t group_qgroup(uint64_t n) { return (uint64_t{1} << 48) | n; }
// Makes qgroup `group` (fd: anywhere on the file system) if it does not exist, puts the qgroup of
// subvolume subvol_id in it unless it is in already, and limits the group to max_bytes (0: none).
common::Status join_group(int fd, uint64_t subvol_id, uint64_t group, uint64_t max_bytes);

struct Usage {
  uint64_t referenced = 0;  // as of the last transaction commit (every 30 s at most)
  uint64_t limit = 0;       // 0 = none
};
// From /sys/fs/btrfs/<fsid>/qgroups/0_<id>/ (Linux 5.9+).
common::Result<Usage> usage(int subvol_fd);
// The same for qgroup `qgroup` of the file system of fd (a group: group_qgroup(n)).
common::Result<Usage> qgroup_usage(int fd, uint64_t qgroup);

// The path of the (single) device the file system of fd is on, e.g. /dev/loop3.
common::Result<std::string> device_path(int fd);
// Grows the file system of mount_fd to the size of its device (after the image grew).
common::Status grow_to_device(int mount_fd);

}  // namespace cellgate::workspace::btrfs
