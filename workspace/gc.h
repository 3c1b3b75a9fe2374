// SPDX-License-Identifier: BSD-3-Clause
// gc: removes objects no snapshot of any workspace references and no pin (pins.h) holds.
#pragma once

#include <cstdint>
#include <string>

#include "common/progress.h"
#include "common/result.h"
#include "workspace/object_store.h"

namespace cellgate::workspace {

struct GcResult {
  uint64_t objects_kept = 0;
  uint64_t objects_removed = 0;
  uint64_t bytes_freed = 0;
  uint64_t temps_removed = 0;  // staging files left by crashed snapshots
};

// Holds the store lock exclusively (snapshots and restores wait). Refuses to delete anything
// (kInternal) if any manifest or pin cannot be read or parsed. Thread-safe. progress, if set, hears each
// manifest read ("manifests"), each object looked at ("objects") and each removed ("removing").
common::Result<GcResult> collect_garbage(ObjectStore& store, const std::string& data_dir,
                                         const common::ProgressFn& progress = {});

}  // namespace cellgate::workspace
