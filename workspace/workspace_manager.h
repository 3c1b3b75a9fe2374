// SPDX-License-Identifier: BSD-3-Clause
// workspace_manager: named per-owner workspaces under the gateway's data dir (create, open, fork, delete).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "workspace/object_store.h"
#include "workspace/workspace.h"

namespace cellgate::workspace {

struct WorkspaceRef {
  std::string owner;
  std::string name;
};

// The entry point the gateway holds (one per data dir). Thread-safe: every method may be
// called concurrently; per-workspace work is serialised by the workspace's flock.
// Errors: kBadRequest (invalid names), kNotFound, kConflict (exists), kInternal (errno).
class WorkspaceManager {
 public:
  // Creates <data_dir> and the store if missing. Config errors → kInternal with errno.
  static common::Result<std::unique_ptr<WorkspaceManager>> open(std::string data_dir, WorkspaceConfig config);

  // Creates an empty workspace atomically (staged in <data>/tmp, then renamed): kConflict if it exists.
  common::Result<Workspace> create(const WorkspaceRef& ref);
  // create() unless it exists; then open().
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

  ObjectStore& store() { return store_; }
  const std::string& data_dir() const { return data_dir_; }
  const WorkspaceConfig& config() const { return config_; }

 private:
  WorkspaceManager(std::string data_dir, WorkspaceConfig config, ObjectStore store)
      : data_dir_(std::move(data_dir)), config_(config), store_(std::move(store)) {}
  common::Result<std::string> checked_dir(const WorkspaceRef& ref) const;

  std::string data_dir_;
  WorkspaceConfig config_;
  ObjectStore store_;
};

}  // namespace cellgate::workspace
