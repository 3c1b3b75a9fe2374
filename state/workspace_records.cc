// SPDX-License-Identifier: BSD-3-Clause
// workspace_records: the workspaces table and the index of their snapshots.
#include "state/workspace_records.h"

#include "state/rows.h"

namespace cellgate::state {

using common::Result;
using common::Status;

namespace {

constexpr const char* kSnapshotColumns =
    "owner, workspace, snapshot_id, label, created, auto, created_ns, parent, kernel_id, execution_count, added, "
    "changed, removed, entries, bytes";

constexpr const char* kWorkspaceColumns = "owner, name, created, ephemeral, node";

WorkspaceRow read_workspace(const Statement& st) {
  return WorkspaceRow{st.column_text(0), st.column_text(1), st.column_text(2), st.column_int(3) != 0,
                      st.column_text(4)};
}

SnapshotRow read_snapshot(const Statement& st) {
  SnapshotRow r{st.column_text(0), st.column_text(1), st.column_text(2), st.column_text(3), st.column_text(4),
                st.column_int(5) != 0};
  r.created_ns = st.column_int(6);
  r.parent = st.column_text(7);
  r.kernel_id = st.column_text(8);
  r.execution_count = st.column_opt_int(9);
  r.added = st.column_opt_int(10);
  r.changed = st.column_opt_int(11);
  r.removed = st.column_opt_int(12);
  r.entries = st.column_int(13);
  r.bytes = st.column_int(14);
  return r;
}

}  // namespace

Status insert_workspace(Database& db, const WorkspaceRow& w) {
  auto st = db.prepare("INSERT INTO workspaces (owner, name, created, ephemeral, node) VALUES (?, ?, ?, ?, ?)");
  if (!st) return st.error();
  st->bind(1, w.owner).bind(2, w.name).bind(3, w.created).bind(4, w.ephemeral).bind(5, w.node);
  return st->run();
}

Result<WorkspaceRow> get_workspace(Database& db, const std::string& owner, const std::string& name) {
  auto st = db.prepare(std::string("SELECT ") + kWorkspaceColumns + " FROM workspaces WHERE owner = ? AND name = ?");
  if (!st) return st.error();
  st->bind(1, owner).bind(2, name);
  return first<WorkspaceRow>(*st, read_workspace, "no such workspace " + name);
}

Result<std::vector<WorkspaceRow>> list_workspaces(Database& db, const std::string& owner) {
  auto st = db.prepare(std::string("SELECT ") + kWorkspaceColumns + " FROM workspaces WHERE owner = ? ORDER BY name");
  if (!st) return st.error();
  st->bind(1, owner);
  return collect<WorkspaceRow>(*st, read_workspace);
}

Status delete_workspace(Database& db, const std::string& owner, const std::string& name) {
  auto st = db.prepare("DELETE FROM workspaces WHERE owner = ? AND name = ?");
  if (!st) return st.error();
  st->bind(1, owner).bind(2, name);
  return change_one(db, *st, "no such workspace " + name);
}

Status ensure_workspace(Database& db, const WorkspaceRow& w) {
  auto st = db.prepare(
      "INSERT INTO workspaces (owner, name, created, ephemeral, node) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING");
  if (!st) return st.error();
  st->bind(1, w.owner).bind(2, w.name).bind(3, w.created).bind(4, w.ephemeral).bind(5, w.node);
  return st->run();
}

Result<std::vector<WorkspaceRow>> list_all_workspaces(Database& db) {
  auto st = db.prepare(std::string("SELECT ") + kWorkspaceColumns + " FROM workspaces ORDER BY owner, name");
  if (!st) return st.error();
  return collect<WorkspaceRow>(*st, read_workspace);
}

Status move_workspace(Database& db, const std::string& owner, const std::string& name, const std::string& expected,
                      const std::string& node) {
  auto st = db.prepare("UPDATE workspaces SET node = ? WHERE owner = ? AND name = ? AND node = ?");
  if (!st) return st.error();
  st->bind(1, node).bind(2, owner).bind(3, name).bind(4, expected);
  if (auto s = st->run(); !s) return s;
  if (db.changes() == 1) return common::ok();
  auto now = get_workspace(db, owner, name);
  if (!now) return now.error();
  return common::make_error(common::Errc::kConflict, "workspace " + name + " moved to node " + now->node);
}

Status insert_snapshot(Database& db, const SnapshotRow& s) {
  auto st = db.prepare(std::string("INSERT INTO snapshots (") + kSnapshotColumns +
                       ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  if (!st) return st.error();
  st->bind(1, s.owner).bind(2, s.workspace).bind(3, s.snapshot_id).bind(4, s.label).bind(5, s.created);
  st->bind(6, s.auto_taken).bind(7, s.created_ns).bind(8, s.parent).bind(9, s.kernel_id).bind(10, s.execution_count);
  st->bind(11, s.added).bind(12, s.changed).bind(13, s.removed).bind(14, s.entries).bind(15, s.bytes);
  return st->run();
}

Result<std::vector<SnapshotRow>> list_snapshots(Database& db, const std::string& owner, const std::string& workspace) {
  auto st = db.prepare(std::string("SELECT ") + kSnapshotColumns +
                       " FROM snapshots WHERE owner = ? AND workspace = ? ORDER BY snapshot_id");
  if (!st) return st.error();
  st->bind(1, owner).bind(2, workspace);
  return collect<SnapshotRow>(*st, read_snapshot);
}

Result<SnapshotRow> get_snapshot(Database& db, const std::string& owner, const std::string& workspace,
                                 const std::string& snapshot_id) {
  auto st = db.prepare(std::string("SELECT ") + kSnapshotColumns +
                       " FROM snapshots WHERE owner = ? AND workspace = ? AND snapshot_id = ?");
  if (!st) return st.error();
  st->bind(1, owner).bind(2, workspace).bind(3, snapshot_id);
  return first<SnapshotRow>(*st, read_snapshot, "no such snapshot " + snapshot_id);
}

Status delete_snapshot(Database& db, const std::string& owner, const std::string& workspace,
                       const std::string& snapshot_id) {
  auto st = db.prepare("DELETE FROM snapshots WHERE owner = ? AND workspace = ? AND snapshot_id = ?");
  if (!st) return st.error();
  st->bind(1, owner).bind(2, workspace).bind(3, snapshot_id);
  return change_one(db, *st, "no such snapshot " + snapshot_id);
}

}  // namespace cellgate::state
