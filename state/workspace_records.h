// SPDX-License-Identifier: BSD-3-Clause
// workspace_records: the workspaces table and the index of their snapshots.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "state/database.h"

namespace cellgate::state {

struct WorkspaceRow {
  std::string owner;
  std::string name;
  std::string created;  // iso8601
  bool ephemeral = false;
  std::string node{};  // the node holding its live tree ("" = none yet, or the one machine's)
};

struct SnapshotRow {
  std::string owner;
  std::string workspace;    // must name a workspaces row of owner; deleting it deletes its snapshots
  std::string snapshot_id;
  std::string label;
  std::string created;      // iso8601
  bool auto_taken = false;  // taken by policy (column "auto"), not on request
  int64_t created_ns = 0;
  std::string parent{};     // the snapshot it was taken over ("" for a workspace's first)
  std::string kernel_id{};  // the kernel whose execute made it ("" when taken on request)
  std::optional<int64_t> execution_count{};
  // Paths added, changed and removed vs parent; nullopt when unknown (a row rebuilt from the store).
  std::optional<int64_t> added{}, changed{}, removed{};
  int64_t entries = 0, bytes = 0;
};

// Errors as Result, never throw: Errc::kConflict on a duplicate key or a missing workspace,
// Errc::kNotFound when the key names no row.
common::Status insert_workspace(Database& db, const WorkspaceRow& w);
common::Result<WorkspaceRow> get_workspace(Database& db, const std::string& owner, const std::string& name);
common::Result<std::vector<WorkspaceRow>> list_workspaces(Database& db, const std::string& owner);
common::Status delete_workspace(Database& db, const std::string& owner, const std::string& name);
// Inserts the row unless it exists (then leaves it as it is).
common::Status ensure_workspace(Database& db, const WorkspaceRow& w);
// Every workspace of every owner, ordered by owner and name.
common::Result<std::vector<WorkspaceRow>> list_all_workspaces(Database& db);
// Moves a workspace to node only if it is still on expected (compare and set); kConflict when it
// moved meanwhile, kNotFound when there is no such workspace.
common::Status move_workspace(Database& db, const std::string& owner, const std::string& name,
                              const std::string& expected, const std::string& node);

common::Status insert_snapshot(Database& db, const SnapshotRow& s);
// Snapshots of one workspace, oldest first (snapshot ids begin with a zero-padded creation counter).
common::Result<std::vector<SnapshotRow>> list_snapshots(Database& db, const std::string& owner,
                                                         const std::string& workspace);
common::Result<SnapshotRow> get_snapshot(Database& db, const std::string& owner, const std::string& workspace,
                                         const std::string& snapshot_id);
common::Status delete_snapshot(Database& db, const std::string& owner, const std::string& workspace,
                               const std::string& snapshot_id);

}  // namespace cellgate::state
