// SPDX-License-Identifier: BSD-3-Clause
// fsck: verifies every object (rehash) and every manifest (well-formed, all objects present).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/progress.h"
#include "common/result.h"
#include "workspace/object_store.h"

namespace cellgate::workspace {

struct FsckReport {
  uint64_t objects_checked = 0;
  uint64_t manifests_checked = 0;
  std::vector<std::string> problems;  // one human-readable line each
  bool clean() const { return problems.empty(); }
};

// Read-only; holds the store lock shared so GC cannot run meanwhile. Errors only when the
// check itself cannot run (kInternal); damage is reported in problems. Thread-safe. progress, if
// set, hears each object ("objects", bytes read) and each manifest ("manifests").
common::Result<FsckReport> fsck(const ObjectStore& store, const std::string& data_dir,
                                const common::ProgressFn& progress = {});

}  // namespace cellgate::workspace
