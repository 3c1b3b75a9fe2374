// SPDX-License-Identifier: BSD-3-Clause
// node_records: the nodes table: joining, renewing, sweeping.
#include "state/node_records.h"

#include <algorithm>

#include <fmt/core.h>

#include "state/rows.h"

namespace cellgate::state {

using common::Errc;
using common::make_error;
using common::Result;
using common::Status;

namespace {

constexpr const char* kNodeColumns =
    "id, address, version, incarnation, started_ms, heartbeat_ms, memory_total, memory_free, kernels, max_kernels, "
    "state, cellgate_now_ms() - heartbeat_ms";

NodeRow read_node(const Statement& st) {
  NodeRow n;
  n.id = st.column_text(0);
  n.address = st.column_text(1);
  n.version = st.column_text(2);
  n.incarnation = st.column_int(3);
  n.started_ms = st.column_int(4);
  n.heartbeat_ms = st.column_int(5);
  n.load = NodeLoad{st.column_int(6), st.column_int(7), st.column_int(8), st.column_int(9)};
  n.state = st.column_text(10);
  n.age_ms = st.column_int(11);
  return n;
}

// No node is believed beyond this (a petabyte of memory, a million kernels): one that reports more is
// broken or lying, and must not draw every placement to itself.
NodeLoad clamped(NodeLoad l) {
  constexpr int64_t kMaxMemory = int64_t{1} << 50;
  l.memory_total = std::clamp<int64_t>(l.memory_total, 0, kMaxMemory);
  l.memory_free = std::clamp<int64_t>(l.memory_free, 0, l.memory_total);
  l.kernels = std::clamp<int64_t>(l.kernels, 0, 1 << 20);
  l.max_kernels = std::clamp<int64_t>(l.max_kernels, 0, 1 << 20);
  return l;
}

}  // namespace

Status validate_node_id(const std::string& id) {
  bool ok = !id.empty() && id.size() <= 64 && id != "." && id != "..";
  for (char c : id)
    ok = ok && ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                c == '-');
  if (!ok) return make_error(Errc::kBadRequest, "a node id is 1..64 characters of [A-Za-z0-9._-], got '" + id + "'");
  return common::ok();
}

Result<Registration> register_node(Database& db, const NodeRow& me, int64_t lease_ms) {
  if (auto s = validate_node_id(me.id); !s) return s.error();
  if (me.state != "up" && me.state != "draining") return make_error(Errc::kBadRequest, "a node joins up or draining");
  auto tx = Transaction::begin(db);
  if (!tx) return tx.error();
  if (auto s = tx->lock("cellgate.node:" + me.id); !s) return s.error();
  Registration out;
  auto before = get_node(db, me.id);
  if (!before && before.error().code != Errc::kNotFound) return before.error();
  int64_t incarnation = 1;
  if (before) {
    // A restart of this node (kill -9, upgrade) finds its own fresh row at the same address; another
    // process with the same id elsewhere would take over a live node's kernels.
    if (before->state != "lost" && before->age_ms < lease_ms && before->address != me.address)
      return make_error(Errc::kConflict, fmt::format("node id {} is held by a live node at {} (renewed {} ms ago)",
                                                     me.id, before->address, before->age_ms));
    out.previous_state = before->state;
    incarnation = before->incarnation + 1;
  }
  const NodeLoad l = clamped(me.load);
  auto st = db.prepare(
      "INSERT INTO nodes (id, address, version, incarnation, started_ms, heartbeat_ms, memory_total, memory_free, "
      "kernels, max_kernels, state) VALUES (?, ?, ?, ?, cellgate_now_ms(), cellgate_now_ms(), ?, ?, ?, ?, ?) "
      "ON CONFLICT (id) DO UPDATE SET address = excluded.address, version = excluded.version, "
      "incarnation = excluded.incarnation, started_ms = excluded.started_ms, heartbeat_ms = excluded.heartbeat_ms, "
      "memory_total = excluded.memory_total, memory_free = excluded.memory_free, kernels = excluded.kernels, "
      "max_kernels = excluded.max_kernels, state = excluded.state");
  if (!st) return st.error();
  st->bind(1, me.id).bind(2, me.address).bind(3, me.version).bind(4, incarnation);
  st->bind(5, l.memory_total).bind(6, l.memory_free).bind(7, l.kernels).bind(8, l.max_kernels).bind(9, me.state);
  if (auto s = st->run(); !s) return s.error();
  if (auto s = tx->commit(); !s) return s.error();
  out.incarnation = incarnation;
  return out;
}

Result<Renewal> renew_node(Database& db, const std::string& id, int64_t incarnation, const NodeLoad& load) {
  const NodeLoad l = clamped(load);
  auto st = db.prepare(
      "UPDATE nodes SET heartbeat_ms = cellgate_now_ms(), memory_total = ?, memory_free = ?, kernels = ?, "
      "max_kernels = ? WHERE id = ? AND incarnation = ? AND state <> 'lost'");
  if (!st) return st.error();
  st->bind(1, l.memory_total).bind(2, l.memory_free).bind(3, l.kernels).bind(4, l.max_kernels);
  st->bind(5, id).bind(6, incarnation);
  if (auto s = st->run(); !s) return s.error();
  return db.changes() == 1 ? Renewal::kRenewed : Renewal::kLost;
}

Result<std::vector<std::string>> sweep_lost_nodes(Database& db, int64_t lease_ms) {
  auto tx = Transaction::begin(db);
  if (!tx) return tx.error();
  // READ COMMITTED re-checks the WHERE clause on a row another transaction just renewed: a node whose
  // renewal commits first is not swept, and two sweepers cannot both declare one node lost.
  auto st = db.prepare(
      "UPDATE nodes SET state = 'lost' WHERE state <> 'lost' AND heartbeat_ms < cellgate_now_ms() - ? RETURNING id");
  if (!st) return st.error();
  st->bind(1, lease_ms);
  auto lost = collect<std::string>(*st, [](const Statement& s) { return s.column_text(0); });
  if (!lost) return lost.error();
  for (const auto& id : lost.value()) {
    auto dead = db.prepare(
        "UPDATE kernels SET state = 'dead', reason = 'node lost' WHERE node = ? AND state NOT IN ('dead', 'placing')");
    if (!dead) return dead.error();
    if (auto s = dead->bind(1, id).run(); !s) return s.error();
    auto placing = db.prepare("DELETE FROM kernels WHERE node = ? AND state = 'placing'");
    if (!placing) return placing.error();
    if (auto s = placing->bind(1, id).run(); !s) return s.error();
  }
  if (auto s = tx->commit(); !s) return s.error();
  return lost;
}

Result<std::vector<NodeRow>> list_nodes(Database& db) {
  auto st = db.prepare(std::string("SELECT ") + kNodeColumns + " FROM nodes ORDER BY id");
  if (!st) return st.error();
  return collect<NodeRow>(*st, read_node);
}

Result<NodeRow> get_node(Database& db, const std::string& id) {
  auto st = db.prepare(std::string("SELECT ") + kNodeColumns + " FROM nodes WHERE id = ?");
  if (!st) return st.error();
  st->bind(1, id);
  return first<NodeRow>(*st, read_node, "no such node " + id);
}

Status set_node_state(Database& db, const std::string& id, const std::string& state) {
  if (state != "up" && state != "draining") return make_error(Errc::kBadRequest, "a node is set up or draining");
  auto st = db.prepare("UPDATE nodes SET state = ? WHERE id = ? AND state <> 'lost'");
  if (!st) return st.error();
  st->bind(1, state).bind(2, id);
  if (auto s = st->run(); !s) return s;
  if (db.changes() == 1) return common::ok();
  auto now = get_node(db, id);
  if (!now) return now.error();
  return make_error(Errc::kConflict, "node " + id + " is lost");
}

Result<int64_t> server_now_ms(Database& db) {
  auto st = db.prepare("SELECT cellgate_now_ms()");
  if (!st) return st.error();
  return first<int64_t>(*st, [](const Statement& s) { return s.column_int(0); }, "no clock");
}

}  // namespace cellgate::state
