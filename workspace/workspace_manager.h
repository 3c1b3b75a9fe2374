// SPDX-License-Identifier: BSD-3-Clause
// workspace_manager: named per-owner workspaces under the gateway's data dir (create, open, fork, delete).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "workspace/object_store.h"
#include "workspace/pins.h"
#include "workspace/volume.h"
#include "workspace/workspace.h"

namespace cellgate::workspace {

struct WorkspaceRef {
  std::string owner;
  std::string name;
  uint64_t max_bytes = 0;    // the owner's quota, applied when the workspace is made or ensured; 0 = the config's
  uint64_t store_bytes = 0;  // the owner's store quota for what fork() adopts; 0 = the config's
};

// The entry point the gateway holds (one per data dir). Thread-safe: every method may be
// called concurrently; per-workspace work is serialised by the workspace's flock.
// Errors: kBadRequest (invalid names), kNotFound, kConflict (exists), kInternal (errno).
class WorkspaceManager {
 public:
  // Creates <data_dir> and the store if missing. With config.store_dir, the pins live beside that store
  // (pins.h) and those still under <data>/pins are moved there first. Config errors → kInternal with errno.
  static common::Result<std::unique_ptr<WorkspaceManager>> open(std::string data_dir, WorkspaceConfig config);

  // Creates an empty workspace atomically (staged, then renamed): kConflict if it exists. With a
  // volume its tree is a subvolume limited to ref.max_bytes (or the config's max_bytes).
  common::Result<Workspace> create(const WorkspaceRef& ref);
  // create() unless it exists; then open() (and, with a volume and ref.max_bytes, set its limit).
  common::Result<Workspace> ensure(const WorkspaceRef& ref);
  common::Result<Workspace> open(const WorkspaceRef& ref);
  // Where ref's tree is (or would be), without touching the disk: kBadRequest for invalid names.
  common::Result<std::string> tree_path(const WorkspaceRef& ref) const;
  // Removes the workspace with its snapshots (objects stay until gc()). Kernels still using
  // tree/ keep their open mount but the name is gone at once (renamed away, then deleted).
  common::Status remove(const WorkspaceRef& ref);
  common::Result<std::vector<std::string>> list(const std::string& owner) const;
  // Every owner that has a workspace directory, sorted.
  common::Result<std::vector<std::string>> owners() const;
  // A new workspace `to` whose tree and first snapshot equal snapshot `id` of `from`.
  common::Result<Workspace> fork(const WorkspaceRef& from, const std::string& id, const WorkspaceRef& to);

  // The live quota of ref's tree: its limit and what it holds. kUnavailable without a volume.
  common::Result<btrfs::Usage> quota(const WorkspaceRef& ref) const;
  // The live quota of all of owner's trees together (config().owner_max_bytes). kUnavailable without a volume.
  common::Result<btrfs::Usage> owner_quota(const std::string& owner) const;
  // The volume holding the trees, or nullptr (VolumeMode kOff, or kAuto where it was not possible).
  Volume* volume() const { return volume_.get(); }
  // Where workspaces are staged while made or removed: on the trees' file system (renames are atomic).
  std::string staging_dir() const;

  ObjectStore& store() { return store_; }
  // Where pins live (<store>/pins with --store-dir, else <data>/pins).
  const PinsDir& pins() const { return pins_; }
  const std::string& data_dir() const { return data_dir_; }
  const WorkspaceConfig& config() const { return config_; }

 private:
  WorkspaceManager(std::string data_dir, WorkspaceConfig config, ObjectStore store, std::unique_ptr<Volume> volume)
      : data_dir_(std::move(data_dir)), config_(config), store_(std::move(store)), volume_(std::move(volume)),
        pins_(pins_dir(data_dir_, config_.store_dir)) {}
  common::Result<std::string> checked_dir(const WorkspaceRef& ref) const;
  // Removes a staged or doomed workspace dir (its tree in one go when it is a subvolume).
  common::Status discard(const std::string& staged) const;
  // Puts the tree at `tree` (a subvolume) in the group of owner_dir's trees, limited to owner_max_bytes.
  common::Status group(const std::string& owner_dir, const std::string& tree) const;
  uint64_t quota_of(const WorkspaceRef& ref) const { return ref.max_bytes != 0 ? ref.max_bytes : config_.max_bytes; }
  // The config with ref's own quotas in.
  WorkspaceConfig config_for(const WorkspaceRef& ref) const {
    WorkspaceConfig c = config_;
    c.max_bytes = quota_of(ref);
    if (ref.store_bytes != 0) c.store_bytes = ref.store_bytes;
    return c;
  }

  std::string data_dir_;
  WorkspaceConfig config_;
  ObjectStore store_;
  std::unique_ptr<Volume> volume_;
  PinsDir pins_;
};

}  // namespace cellgate::workspace
