// SPDX-License-Identifier: BSD-3-Clause
// snapshot_index: keeps the database's snapshot index (state/) in step with the workspace store (workspace/).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "state/database.h"
#include "workspace/workspace_manager.h"

namespace cellgate::gateway {

// The store is the truth for content; the index says who made each snapshot and what it changed, and
// serves listings. The gateway wires the two, so neither library depends on the other.

// What made a snapshot: a kernel's execute (kernel_id and its execution_count), or a request.
struct SnapshotOrigin {
  std::string kernel_id{};
  std::optional<int64_t> execution_count{};
};

// Database calls: io thread only (the Database is single-threaded).
// Indexes a snapshot just taken (snap.created), and drops the rows retention pruned.
common::Status index_snapshot(state::Database& db, const workspace::WorkspaceRef& ref,
                              const workspace::SnapshotResult& snap, const workspace::SnapshotOptions& options,
                              const SnapshotOrigin& origin);
common::Status unindex_snapshot(state::Database& db, const workspace::WorkspaceRef& ref, const std::string& id);
// The workspace row and, by cascade, its snapshots.
common::Status unindex_workspace(state::Database& db, const workspace::WorkspaceRef& ref);
// Row ids of one workspace (for store_snapshots' `known`).
common::Result<std::set<std::string>> indexed_ids(state::Database& db, const workspace::WorkspaceRef& ref);

// One workspace's snapshots as the store has them, oldest first. For ids not in `known`, the parent is
// taken to be the previous snapshot and the diff against it is computed. Any thread (store only).
struct StoreSnapshot {
  workspace::SnapshotInfo info;
  std::string parent;
  std::optional<workspace::Diff> diff;
};
common::Result<std::vector<StoreSnapshot>> store_snapshots(workspace::WorkspaceManager& mgr,
                                                           const workspace::WorkspaceRef& ref,
                                                           const std::set<std::string>& known);

struct ReconcileCounts {
  size_t rebuilt = 0;  // rows added for snapshots the store has
  size_t dropped = 0;  // rows removed for snapshots (or workspaces) the store no longer has
};
// Makes one workspace's rows match what store_snapshots returned. Io thread.
common::Result<ReconcileCounts> apply_store_snapshots(state::Database& db, const workspace::WorkspaceRef& ref,
                                                      const std::vector<StoreSnapshot>& in_store);
// At start, before serving: every workspace of the store and of the database. Blocking.
common::Result<ReconcileCounts> reconcile_snapshot_index(state::Database& db, workspace::WorkspaceManager& mgr);

}  // namespace cellgate::gateway
