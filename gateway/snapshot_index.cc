// SPDX-License-Identifier: BSD-3-Clause
// snapshot_index: keeps the database's snapshot index in step with the workspace store.
#include "gateway/snapshot_index.h"

#include <map>

#include "common/log.h"
#include "common/time_format.h"
#include "state/workspace_records.h"

namespace cellgate::gateway {

using common::Result;
using common::Status;

namespace {

std::string iso_of_ns(int64_t ns) { return common::iso8601(common::SystemTime(std::chrono::nanoseconds(ns))); }

Status ensure_row(state::Database& db, const workspace::WorkspaceRef& ref) {
  return state::ensure_workspace(db, state::WorkspaceRow{ref.owner, ref.name, common::iso8601_now(), false});
}

}  // namespace

Status index_snapshot(state::Database& db, const workspace::WorkspaceRef& ref, const workspace::SnapshotResult& snap,
                      const workspace::SnapshotOptions& options, const SnapshotOrigin& origin) {
  if (auto st = ensure_row(db, ref); !st) return st;
  for (const auto& id : snap.pruned) (void)state::delete_snapshot(db, ref.owner, ref.name, id);
  if (!snap.created) return common::ok();
  state::SnapshotRow row{ref.owner, ref.name, snap.id, options.label, iso_of_ns(snap.created_ns), options.automatic};
  row.created_ns = snap.created_ns;
  row.parent = snap.parent;
  row.kernel_id = origin.kernel_id;
  row.execution_count = origin.execution_count;
  row.added = static_cast<int64_t>(snap.diff.added.size());
  row.changed = static_cast<int64_t>(snap.diff.changed.size());
  row.removed = static_cast<int64_t>(snap.diff.removed.size());
  row.entries = static_cast<int64_t>(snap.entries);
  row.bytes = static_cast<int64_t>(snap.bytes);
  return state::insert_snapshot(db, row);
}

Status unindex_snapshot(state::Database& db, const workspace::WorkspaceRef& ref, const std::string& id) {
  auto st = state::delete_snapshot(db, ref.owner, ref.name, id);
  if (!st && st.error().code == common::Errc::kNotFound) return common::ok();
  return st;
}

Status unindex_workspace(state::Database& db, const workspace::WorkspaceRef& ref) {
  auto st = state::delete_workspace(db, ref.owner, ref.name);
  if (!st && st.error().code == common::Errc::kNotFound) return common::ok();
  return st;
}

Result<std::set<std::string>> indexed_ids(state::Database& db, const workspace::WorkspaceRef& ref) {
  auto rows = state::list_snapshots(db, ref.owner, ref.name);
  if (!rows) return rows.error();
  std::set<std::string> ids;
  for (const auto& r : rows.value()) ids.insert(r.snapshot_id);
  return ids;
}

Result<std::vector<StoreSnapshot>> store_snapshots(workspace::WorkspaceManager& mgr, const workspace::WorkspaceRef& ref,
                                                   const std::set<std::string>& known) {
  auto opened = mgr.open(ref);
  if (!opened) {
    if (opened.error().code == common::Errc::kNotFound) return std::vector<StoreSnapshot>{};
    return opened.error();
  }
  auto infos = opened->list_snapshots();
  if (!infos) return infos.error();
  std::vector<StoreSnapshot> out;
  std::string previous;
  for (auto& info : infos.value()) {
    StoreSnapshot s{info, previous, std::nullopt};
    if (!known.count(info.id)) {
      if (previous.empty()) {
        // A workspace's first snapshot (or a fork's): everything in it was added.
        auto m = opened->load_snapshot(info.id);
        if (m) {
          workspace::Diff d;
          for (const auto& e : m->entries) d.added.push_back(e.path);
          s.diff = std::move(d);
        }
      } else if (auto d = opened->diff(previous, info.id); d) {
        s.diff = std::move(d.value());
      }
    }
    previous = info.id;
    out.push_back(std::move(s));
  }
  return out;
}

Result<ReconcileCounts> apply_store_snapshots(state::Database& db, const workspace::WorkspaceRef& ref,
                                              const std::vector<StoreSnapshot>& in_store) {
  ReconcileCounts counts;
  auto rows = state::list_snapshots(db, ref.owner, ref.name);
  if (!rows) return rows.error();
  std::set<std::string> store_ids;
  for (const auto& s : in_store) store_ids.insert(s.info.id);
  std::set<std::string> row_ids;
  for (const auto& r : rows.value()) {
    row_ids.insert(r.snapshot_id);
    if (store_ids.count(r.snapshot_id)) continue;
    if (auto st = state::delete_snapshot(db, ref.owner, ref.name, r.snapshot_id); !st) return st.error();
    ++counts.dropped;
  }
  if (in_store.empty()) return counts;
  if (auto st = ensure_row(db, ref); !st) return st.error();
  for (const auto& s : in_store) {
    if (row_ids.count(s.info.id)) continue;
    state::SnapshotRow row{ref.owner, ref.name, s.info.id, s.info.label, iso_of_ns(s.info.created_ns), s.info.automatic};
    row.created_ns = s.info.created_ns;
    row.parent = s.parent;
    if (s.diff) {
      row.added = static_cast<int64_t>(s.diff->added.size());
      row.changed = static_cast<int64_t>(s.diff->changed.size());
      row.removed = static_cast<int64_t>(s.diff->removed.size());
    }
    row.entries = static_cast<int64_t>(s.info.entries);
    row.bytes = static_cast<int64_t>(s.info.bytes);
    if (auto st = state::insert_snapshot(db, row); !st) return st.error();
    ++counts.rebuilt;
  }
  return counts;
}

Result<ReconcileCounts> reconcile_snapshot_index(state::Database& db, workspace::WorkspaceManager& mgr) {
  // Every workspace either side knows of: the store's directories and the database's rows.
  std::set<std::pair<std::string, std::string>> refs;
  auto owners = mgr.owners();
  if (!owners) return owners.error();
  for (const auto& owner : owners.value()) {
    auto names = mgr.list(owner);
    if (!names) return names.error();
    for (const auto& n : names.value()) refs.emplace(owner, n);
  }
  auto rows = state::list_all_workspaces(db);
  if (!rows) return rows.error();
  std::set<std::pair<std::string, std::string>> in_db;
  for (const auto& w : rows.value()) {
    refs.emplace(w.owner, w.name);
    in_db.emplace(w.owner, w.name);
  }
  ReconcileCounts total;
  for (const auto& [owner, name] : refs) {
    workspace::WorkspaceRef ref{owner, name};
    if (auto opened = mgr.open(ref); !opened) {
      if (opened.error().code != common::Errc::kNotFound) {
        common::log_warn("owner={} workspace={} msg=\"cannot reconcile the snapshot index\" error=\"{}\"", owner, name,
                         opened.error().message);
        continue;
      }
      // Gone from the store: the row and its snapshots go too (cascade).
      auto before = state::list_snapshots(db, owner, name);
      if (auto st = unindex_workspace(db, ref); !st) return st.error();
      total.dropped += before ? before->size() : 0;
      continue;
    }
    auto known = indexed_ids(db, ref);
    if (!known) return known.error();
    auto in_store = store_snapshots(mgr, ref, known.value());
    if (!in_store) return in_store.error();
    if (!in_db.count({owner, name})) {
      if (auto st = ensure_row(db, ref); !st) return st.error();
    }
    auto c = apply_store_snapshots(db, ref, in_store.value());
    if (!c) return c.error();
    total.rebuilt += c->rebuilt;
    total.dropped += c->dropped;
  }
  return total;
}

}  // namespace cellgate::gateway
