// SPDX-License-Identifier: BSD-3-Clause
// volume: every workspace tree in one loop-mounted btrfs image, each a subvolume with a live quota.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"
#include "common/unique_fd.h"
#include "workspace/btrfs.h"

namespace cellgate::workspace {

// Why one image for all workspaces (README "Workspace quotas"): the quota holds when bytes are
// written (EDQUOT inside the kernel), it costs one loop device and one mount in all, a workspace
// costs one subvolume (created in ~0.1 ms) and a limit change one ioctl; and the kernel's
// /proc/self/mountinfo shows a loop device and a path inside the image, never the host's data dir.
// XFS and ext4 project quotas would need no image, but this kernel has neither (no CONFIG_XFS_QUOTA,
// no CONFIG_QFMT_V2); one image per workspace would cost a loop device, a mount and a mkfs each.
//
// <data>/workspaces.img is a sparse file of a fixed size (kDefaultBytes unless the operator says
// otherwise): making it reserves nothing, and it takes the host's disk only as the workspaces fill
// it, blocks they free going back (discard=async). Who pays: the host's disk, bounded by the image's
// size for all workspaces together, and each workspace by its own quota inside. A start where the
// image could outgrow the host's free disk says so (log warning) rather than take the disk up
// front: a size a fresh host cannot give is the operator's choice to make, and a loud one.
class Volume {
 public:
  static constexpr uint64_t kDefaultBytes = uint64_t{16} << 30;
  // Mounts <data>/workspaces.img at <data>/workspaces, making the image first when it does not
  // exist (size_bytes, or when 0: kDefaultBytes). Reuses a mount of it that is there already (an earlier gateway's: the
  // mount stays while kernels use it), and the loop device it is on if it is still attached. A
  // bigger size_bytes than the image has grows it. Refuses (kConflict) when <data>/workspaces
  // holds workspaces of its own (made before the volume). Needs root.
  static common::Result<std::unique_ptr<Volume>> open(const std::string& data_dir, uint64_t size_bytes);
  // For the data dir's other users (fsck, gc): open() when <data>/workspaces.img exists (call
  // release() afterwards when mounted_here()), else nullptr.
  static common::Result<std::unique_ptr<Volume>> open_existing(const std::string& data_dir);
  static std::string image_path(const std::string& data_dir);
  // Whether <data>/workspaces is the mounted volume of <data>/workspaces.img.
  static bool is_mounted(const std::string& data_dir);

  // Makes parent_fd/name a new subvolume holding at most max_bytes (0: no limit), owned uid:gid.
  common::Status make_tree(int parent_fd, const std::string& name, uint64_t max_bytes, int uid, int gid) const;
  // Changes the limit of the tree at `tree` (a subvolume made by make_tree).
  common::Status set_limit(const std::string& tree, uint64_t max_bytes) const;
  common::Result<btrfs::Usage> usage(const std::string& tree) const;
  // Puts the tree at tree_fd (a subvolume made by make_tree) in its owner's group: the trees under
  // owner_fd (<data>/workspaces/<owner>, a directory of the volume) together hold at most max_bytes
  // (0: no bound), enforced at write time like each tree's own limit. The group is the level-1 qgroup
  // numbered after owner_fd's inode: stable across mounts, one per owner dir, no table to keep.
  common::Status group_tree(int tree_fd, int owner_fd, uint64_t max_bytes) const;
  // What the trees of the owner dir at owner_fd hold together, and their group's limit.
  common::Result<btrfs::Usage> group_usage(int owner_fd) const;
  // Deletes parent_fd/name when it is a subvolume (whatever it holds, in O(1)); else does nothing.
  common::Status remove_tree(int parent_fd, const std::string& name) const;
  // Unmounts <data>/workspaces unless another opener (a gateway, `cellgate gc`) holds it (each holds
  // a shared flock on <data>/workspaces.users while it lives) or something in this mount namespace
  // uses it (EBUSY). The last call on this object. Kernels' jails hold mounts of their own (clones) in their namespaces: they keep
  // the file system and its loop device alive until they end (LO_FLAGS_AUTOCLEAR then detaches it).
  void release();
  // Whether open() mounted it (rather than finding it mounted).
  bool mounted_here() const { return mounted_here_; }

  const std::string& mount_point() const { return mount_point_; }
  uint64_t size_bytes() const { return size_bytes_; }

 private:
  Volume() = default;
  std::string image_, mount_point_;
  uint64_t size_bytes_ = 0;
  bool mounted_here_ = false;
  common::UniqueFd lock_;  // <data>/workspaces.users, flock shared while this opener lives
};

}  // namespace cellgate::workspace
