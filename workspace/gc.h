// SPDX-License-Identifier: BSD-3-Clause
// gc: removes objects no snapshot of any workspace references and no pin (pins.h) holds.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "common/progress.h"
#include "common/result.h"
#include "workspace/object_store.h"

namespace cellgate::workspace {

struct GcOptions {
  std::string data_dir;
  // The store is --store-dir's, which cluster nodes may share (docs/cluster.md §6): besides this data
  // dir's manifests and pins, gc marks every manifest published in the store (every owner and node,
  // held ones too) and the pins beside it, and removes only unmarked objects, and temps, whose mtime
  // is older than min_age: a node may have written or reused them for a manifest it has not
  // published yet (ObjectStore::reuse touches what it reuses). false: this data dir's store only, which
  // no other node writes; everything unmarked goes at once (and a store with manifests/ is refused).
  bool shared = false;
  std::chrono::seconds min_age{3600};
};

struct GcResult {
  uint64_t objects_kept = 0;
  uint64_t objects_removed = 0;
  uint64_t objects_young = 0;  // unmarked but younger than min_age (shared): kept this time
  uint64_t bytes_freed = 0;
  uint64_t temps_removed = 0;  // staging files left by crashed snapshots
};

// Holds the store lock exclusively (snapshots and restores wait; on a shared filesystem maybe only this
// node's). Refuses to delete anything (kInternal) if any manifest or pin cannot be read or parsed.
// Thread-safe. progress, if set, hears each manifest read ("manifests"), each object looked at
// ("objects") and each removed ("removing").
common::Result<GcResult> collect_garbage(ObjectStore& store, const GcOptions& options,
                                         const common::ProgressFn& progress = {});

}  // namespace cellgate::workspace
