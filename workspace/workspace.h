// SPDX-License-Identifier: BSD-3-Clause
// workspace: one workspace's live tree and snapshots (incremental snapshot, list, diff, restore, retention).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/progress.h"
#include "common/result.h"
#include "workspace/manifest.h"
#include "workspace/layout.h"
#include "workspace/published_manifests.h"
#include "workspace/object_store.h"
#include "workspace/pins.h"
#include "workspace/store_usage.h"
#include "workspace/tar_writer.h"

namespace cellgate::workspace {

// Where workspace trees live: plain directories of the data dir (kOff), or subvolumes of a
// loop-mounted btrfs volume with a live byte quota each (volume.h): kOn, or kAuto = kOn as root and
// kOff otherwise (as root, a volume that cannot be made is an error, never a silent fallback). A
// data dir whose volume exists already has its workspaces in it: that volume is used in every mode.
enum class VolumeMode { kOff, kAuto, kOn };

struct WorkspaceConfig {
  uint64_t max_bytes = uint64_t{10} << 30;  // per workspace, sum of file sizes; with a volume, also its live quota
  // With a volume: what all of one owner's workspace trees may hold together, a live quota like each
  // tree's own (a user with many workspaces or kernels cannot fill the volume); 0 = no bound.
  uint64_t owner_max_bytes = 0;
  uint64_t max_files = 200'000;             // per workspace, entries of any type
  size_t keep_auto = 20;                    // automatic unlabelled snapshots kept by retention
  uint64_t store_bytes = 0;                 // the owner's store quota over all their workspaces (store_usage.h); 0 = none
  std::chrono::seconds snapshot_timeout{300};  // scan + hashing budget (kTimeout past it)
  int tree_uid = -1;                        // owner of new workspace roots (-1: the gateway's)
  int tree_gid = -1;
  VolumeMode volume = VolumeMode::kOff;
  uint64_t volume_bytes = 0;                // the volume's size when made or grown; 0 = volume.h's default
  // The object store: "" = <data>/store. Given (--store-dir), it may be shared by cluster nodes, and
  // every snapshot's manifest is published there too (published_manifests.h).
  std::string store_dir;
};

// Test seam: called at each point; a test child may _exit() there to simulate a crash.
enum class FaultPoint { kObjectWritten, kBeforeManifestRename };
using FaultHook = std::function<void(FaultPoint, size_t count)>;

// Defaults are the gateway's after-execute call; a user's "save" is
// {.automatic = false, .label = "…", .only_if_changed = false}.
struct SnapshotOptions {
  bool automatic = true;
  std::string label;            // non-empty keeps it through retention (≤ 128 bytes)
  bool only_if_changed = true;  // no new snapshot when the tree equals the head snapshot
  // Into a shared store (WorkspaceConfig::store_dir) under held/: gc keeps its objects, but no node
  // takes it for the workspace's newest state (published_manifests.h).
  bool held = false;
};

struct SnapshotResult {
  bool created = false;
  std::string id;  // the new snapshot, or the unchanged head
  std::string parent;  // the head it was taken over ("" for a workspace's first)
  Diff diff;       // vs the head snapshot (the last one taken or restored)
  int64_t created_ns = 0;                  // of a new snapshot
  uint64_t entries = 0, bytes = 0;         // of a new snapshot
  uint64_t files_hashed = 0, files_reused = 0, bytes_hashed = 0, objects_written = 0;
  std::vector<std::string> skipped;  // special files and over-deep paths, not stored
  std::vector<std::string> pruned;   // snapshots removed by retention afterwards
};

struct SnapshotInfo {
  std::string id;
  int64_t created_ns = 0;
  bool automatic = false;
  std::string label;
  uint64_t entries = 0, bytes = 0;
};

struct RestoreResult {
  Diff applied;  // live tree before → snapshot
  uint64_t files_written = 0;
};

// A handle on <data>/workspaces/<owner>/<name>: tree/ (the bind-mount source, never replaced),
// snapshots/<id>, head, index, lock. Every method is safe to call from any thread: mutating
// ones hold the workspace flock exclusively and the object store lock shared.
// Errors: kNotFound (no such snapshot), kTooLarge (caps), kBadRequest, kInternal (errno).
class Workspace {
 public:
  Workspace(ObjectStore& store, std::string dir, const WorkspaceConfig& config)
      : store_(&store), dir_(std::move(dir)), config_(config),
        published_(PublishedManifests::for_workspace(config.store_dir, dir_)),
        pins_(pins_dir(data_dir_of(dir_), config.store_dir)) {}

  std::string tree_path() const { return dir_ + "/tree"; }
  const std::string& dir() const { return dir_; }
  const WorkspaceConfig& config() const { return config_; }

  // Scans the tree (re-hashing only files whose stat key changed), stores new objects, and
  // publishes a manifest atomically. Past a cap: kTooLarge and nothing published.
  common::Result<SnapshotResult> snapshot(const SnapshotOptions& options);
  // In creation order.
  common::Result<std::vector<SnapshotInfo>> list_snapshots() const;
  // The snapshot the tree was last saved as or restored from ("" if none).
  std::string head_id() const;
  common::Result<Manifest> load_snapshot(const std::string& id) const;
  common::Result<Diff> diff(const std::string& from_id, const std::string& to_id) const;
  // Makes tree/ equal to the snapshot, file by file (rename into place), keeping tree/'s inode.
  // progress: see restore_tree.
  common::Result<RestoreResult> restore(const std::string& id, const common::ProgressFn& progress = {});
  common::Status delete_snapshot(const std::string& id);
  // Deletes automatic, unlabelled snapshots beyond the newest keep_auto (never the head).
  common::Result<std::vector<std::string>> apply_retention();
  // Streams the snapshot as a POSIX pax/ustar archive into sink (fd_sink(fd) for an fd),
  // holding the store lock shared meanwhile so GC cannot pull objects from under it.
  common::Status write_tar(const std::string& id, const TarSink& sink) const;
  // Copies a manifest in as this workspace's head (fork) and restores it.
  common::Result<RestoreResult> adopt(const Manifest& manifest);
  // With a shared store: adopts the newest published snapshot when this node does not have it and its
  // own head is older (the workspace ran on another node since). What the tree holds beyond its head
  // is first kept as a labelled snapshot, published as held (never the newest state, but gc keeps its
  // objects). The adopted id, or nullopt when nothing changed.
  common::Result<std::optional<std::string>> catch_up();

  void set_fault_hook(FaultHook hook) { fault_hook_ = std::move(hook); }

 private:
  common::Result<std::vector<std::string>> retention_locked();
  // The automatic, unlabelled snapshots beyond keep_auto, oldest first, never `head`.
  std::vector<std::string> retention_plan(const std::vector<SnapshotInfo>& list, const std::string& head) const;
  // The refs the workspace will have with snapshot id in and `prune` out, if the owner's store quota
  // holds them (kInsufficientStorage, naming the quota, if not).
  common::Result<StoreRefs> check_store_quota(const ObjectBatch& batch, const std::string& id,
                                              const std::vector<Entry>& entries, uint64_t manifest_size,
                                              const std::vector<std::string>& prune) const;
  uint64_t object_charge(const std::string& hash) const;
  common::Result<RestoreResult> restore_locked(const Manifest& target, const common::ProgressFn& progress = {});
  // The shared store's copy follows the local one; a failure is logged, not returned: the snapshot is
  // whole here, and the next one publishes the newest state.
  void publish_copy(const std::string& id, const std::string& text, bool held = false);
  void unpublish(const std::string& id);

  ObjectStore* store_;
  std::string dir_;
  WorkspaceConfig config_;
  std::optional<PublishedManifests> published_;
  PinsDir pins_;  // the owner's artifacts count against the store quota
  FaultHook fault_hook_;
};

}  // namespace cellgate::workspace
