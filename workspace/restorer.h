// SPDX-License-Identifier: BSD-3-Clause
// restorer: makes a live tree equal to a manifest by per-entry rename-into-place, never following symlinks.
#pragma once

#include <cstdint>
#include <vector>

#include "common/progress.h"
#include "common/result.h"
#include "workspace/manifest.h"
#include "workspace/object_store.h"
#include "workspace/tree_scan.h"

namespace cellgate::workspace {

struct RestoreStats {
  Diff applied;
  uint64_t files_written = 0;
  StatIndex index;  // stat cache for the untouched files (rewritten ones get re-hashed later)
};

// Scans root_fd (hashing only same-size candidates), removes what the target lacks, then
// writes each new or changed file to a temp beside it and renames it over the old entry, so a
// concurrent reader sees the old or the new file, never a partial one. root_fd itself is never
// replaced. All target objects must exist (checked first: kInternal, tree untouched).
// Ownership is restored when running as root. Not thread-safe per tree. progress, if set, hears
// each target entry as it is put in place ("entries", bytes of the files written so far).
common::Result<RestoreStats> restore_tree(const ObjectStore& store, int root_fd,
                                          const std::vector<Entry>& target, const StatIndex& index,
                                          uint64_t max_live_entries, const common::ProgressFn& progress = {});

}  // namespace cellgate::workspace
