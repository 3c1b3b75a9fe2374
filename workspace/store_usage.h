// SPDX-License-Identifier: BSD-3-Clause
// store_usage: what one workspace's snapshots hold in the object store, for the owner's store quota.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "workspace/manifest.h"
#include "workspace/object_store.h"
#include "workspace/pins.h"

namespace cellgate::workspace {

// A workspace is charged for each object its snapshots reference, once, at its size in whole 4 KiB
// blocks (a sparse file's object holds only its data), and for its manifests. An owner's store
// usage is the sum over their workspaces. An object two users both reference is charged to each
// of them in full: charging it once would tell a user whether someone else stores the same bytes
// (their usage would not grow), and no user's usage may depend on another's.
class StoreRefs {
 public:
  // Kept in <ws>/refs (a cache: when missing, damaged or not covering exactly the snapshots in
  // <ws>/snapshots, as after a crash between a manifest and its refs, it is rebuilt from them).
  static common::Result<StoreRefs> load(const std::string& ws_dir, const std::function<uint64_t(const std::string&)>& object_bytes);
  // Counts a snapshot's objects; those new to the workspace add object_bytes(hash).
  void add(const std::string& id, const std::vector<Entry>& entries, const std::function<uint64_t(const std::string&)>& object_bytes);
  void remove(const std::string& id, const std::vector<Entry>& entries);
  uint64_t object_bytes() const { return bytes_; }
  const std::set<std::string>& snapshots() const { return snapshots_; }
  // Atomic, not durable (see load).
  common::Status save(const std::string& ws_dir) const;

 private:
  struct Ref {
    uint64_t bytes = 0;
    uint64_t count = 0;
  };
  std::set<std::string> snapshots_;
  std::unordered_map<std::string, Ref> objects_;
  uint64_t bytes_ = 0;
};

// An object's charge: its size rounded up to whole 4 KiB blocks.
uint64_t charged_bytes(uint64_t size);
// The sizes of the manifest files in <ws>/snapshots, leaving out `except` (ids).
uint64_t manifest_bytes(const std::string& ws_dir, const std::set<std::string>& except = {});
// What ws_dir's owner holds in the store outside ws_dir: the other workspaces' refs totals and
// manifests, read without taking their locks, and the owner's published artifacts (each one's object
// in whole blocks: <pins>/artifact/<owner>, its object in `store`, the store actually used: --store-dir's
// when given). A workspace without a refs file (never snapshotted under a store quota) is charged the
// sum of its manifests' byte counts: more than it holds, never less.
uint64_t other_workspaces_bytes(const std::string& ws_dir, const ObjectStore& store, const PinsDir& pins);
// What an owner holds in all: every workspace and the artifacts; owner_dir = <data>/workspaces/<owner>.
uint64_t owner_store_bytes(const std::string& owner_dir, const ObjectStore& store, const PinsDir& pins);

}  // namespace cellgate::workspace
