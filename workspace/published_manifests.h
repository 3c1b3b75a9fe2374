// SPDX-License-Identifier: BSD-3-Clause
// published_manifests: copies of a workspace's snapshot manifests in a store that cluster nodes share
// (<store>/manifests/<owner>/<workspace>/<id>), so that the node that starts the workspace's next kernel
// after its node was lost restores it from its newest snapshot (docs/cluster.md §6).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "workspace/manifest.h"

namespace cellgate::workspace {

// <ws>/held/<id> holds snapshots published only so that gc keeps their objects (the one a node keeps
// before restoring from the shared store): newest() never takes them for the workspace's state.
// Files only; one writer per workspace at a time (its workspace lock, on the node that holds it).
// Every write is a temp beside the target, fsync, rename(2), fsync of the directory: a reader on any
// node sees a manifest whole or not at all (renames within a directory are atomic on NFS, CephFS, EFS).
class PublishedManifests {
 public:
  // store_dir: the shared store's root; owner and name: the workspace's (layout.h's name rule).
  PublishedManifests(std::string store_dir, std::string owner, std::string name);
  // For the workspace at <data>/workspaces/<owner>/<name>; nullopt when the store is not shared
  // (store_dir "") or dir is not such a path.
  static std::optional<PublishedManifests> for_workspace(const std::string& store_dir, const std::string& dir);

  // held: under held/ (above).
  common::Status publish(const std::string& id, const std::string& manifest_text, bool held = false);
  // Whether id is published here, plain or held (one stat, two when held or absent).
  bool has(const std::string& id) const;
  // The copy of id, plain or held; ENOENT is success.
  common::Status remove(const std::string& id);
  // The whole workspace's directory (the workspace was deleted).
  common::Status remove_all();
  // The published manifest created last (created_ns; ids count per node, so they do not order
  // snapshots that different nodes took); nullopt when none. A manifest that does not parse is
  // skipped with a log line: the newest good one is still a restore.
  common::Result<std::optional<Manifest>> newest() const;

  const std::string& dir() const { return dir_; }

  // Every manifest published in store_dir, of every owner and workspace, held ones too: their paths
  // (gc marks from them). Temps and foreign names are left out.
  static common::Result<std::vector<std::string>> all_paths(const std::string& store_dir);

 private:
  common::Status make_dirs() const;

  std::string root_;  // <store>/manifests
  std::string owner_;
  std::string dir_;   // <store>/manifests/<owner>/<name>
};

}  // namespace cellgate::workspace
