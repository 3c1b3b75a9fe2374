// SPDX-License-Identifier: BSD-3-Clause
// workspace_records: the workspaces table and the index of their snapshots.
#pragma once

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
};

struct SnapshotRow {
  std::string owner;
  std::string workspace;    // must name a workspaces row of owner; deleting it deletes its snapshots
  std::string snapshot_id;
  std::string label;
  std::string created;      // iso8601
  bool auto_taken = false;  // taken by policy (column "auto"), not on request
};

// Errors as Result, never throw: Errc::kConflict on a duplicate key or a missing workspace,
// Errc::kNotFound when the key names no row.
common::Status insert_workspace(Database& db, const WorkspaceRow& w);
common::Result<WorkspaceRow> get_workspace(Database& db, const std::string& owner, const std::string& name);
common::Result<std::vector<WorkspaceRow>> list_workspaces(Database& db, const std::string& owner);
common::Status delete_workspace(Database& db, const std::string& owner, const std::string& name);

common::Status insert_snapshot(Database& db, const SnapshotRow& s);
// Snapshots of one workspace, oldest first.
common::Result<std::vector<SnapshotRow>> list_snapshots(Database& db, const std::string& owner,
                                                         const std::string& workspace);
common::Result<SnapshotRow> get_snapshot(Database& db, const std::string& owner, const std::string& workspace,
                                         const std::string& snapshot_id);
common::Status delete_snapshot(Database& db, const std::string& owner, const std::string& workspace,
                               const std::string& snapshot_id);

}  // namespace cellgate::state
