// SPDX-License-Identifier: BSD-3-Clause
// placement: which node starts a new kernel, in one transaction.
#include "state/placement.h"

#include <optional>
#include <tuple>
#include <vector>

#include <fmt/core.h>

#include "state/kernel_records.h"
#include "state/rows.h"
#include "state/workspace_records.h"

namespace cellgate::state {

using common::Errc;
using common::make_error;
using common::Result;

namespace {

struct Candidate {
  std::string id, address, state;
  int64_t memory_total = 0, memory_free = 0, max_kernels = 0, committed = 0, kernels = 0;
  bool full() const { return max_kernels > 0 && kernels >= max_kernels; }
  // What placement compares: memory not yet promised to a kernel's limit (the committed sum includes
  // rows written moments ago, which the node's own figures do not yet), then fewer kernels (so that
  // kernels without a memory limit spread too), then memory free now.
  std::tuple<int64_t, int64_t, int64_t> room() const { return {memory_total - committed, -kernels, memory_free}; }
};

Result<std::vector<Candidate>> live_nodes(Database& db, int64_t lease_ms) {
  auto st = db.prepare(
      "SELECT n.id, n.address, n.state, n.memory_total, n.memory_free, n.max_kernels, "
      "(SELECT coalesce(sum(k.memory_bytes), 0) FROM kernels k WHERE k.node = n.id AND k.state <> 'dead'), "
      "(SELECT count(*) FROM kernels k WHERE k.node = n.id AND k.state <> 'dead' AND k.owner <> '@pool') "
      "FROM nodes n WHERE n.state <> 'lost' AND n.heartbeat_ms > cellgate_now_ms() - ? ORDER BY n.id");
  if (!st) return st.error();
  st->bind(1, lease_ms);
  return collect<Candidate>(*st, [](const Statement& s) {
    return Candidate{s.column_text(0), s.column_text(1), s.column_text(2), s.column_int(3),
                     s.column_int(4),  s.column_int(5),  s.column_int(6),  s.column_int(7)};
  });
}

Result<int64_t> live_kernels_of(Database& db, const std::string& owner) {
  auto st = db.prepare("SELECT count(*) FROM kernels WHERE owner = ? AND state <> 'dead'");
  if (!st) return st.error();
  st->bind(1, owner);
  return first<int64_t>(*st, [](const Statement& s) { return s.column_int(0); }, "no count");
}

}  // namespace

Result<Placement> place_kernel(Database& db, const PlacementRequest& r) {
  auto tx = Transaction::begin(db);
  if (!tx) return tx.error();
  // One owner's starts one after the other, on every node: the count below cannot be raced past.
  if (auto s = tx->lock("cellgate.user:" + r.owner); !s) return s.error();
  if (r.max_user_kernels > 0) {
    auto n = live_kernels_of(db, r.owner);
    if (!n) return n.error();
    if (n.value() >= r.max_user_kernels)
      return make_error(Errc::kForbidden,
                        fmt::format("quota exceeded: max_kernels ({}) for user {}", r.max_user_kernels, r.owner));
  }
  if (auto s = ensure_workspace(db, WorkspaceRow{r.owner, r.workspace, r.created, false}); !s) return s.error();
  auto ws = get_workspace(db, r.owner, r.workspace);
  if (!ws) return ws.error();
  auto nodes = live_nodes(db, r.lease_ms);
  if (!nodes) return nodes.error();

  std::optional<Candidate> pick;
  for (const auto& n : nodes.value()) {
    // A workspace's live tree is on one node at a time: its kernels join it there while it lives,
    // draining or not (a second tree elsewhere would fork it).
    if (!ws->node.empty() && n.id == ws->node) {
      if (n.full())
        return make_error(Errc::kUnavailable, fmt::format("node {}, which holds workspace {}, runs its maximum of "
                                                          "{} kernels", n.id, r.workspace, n.max_kernels));
      pick = n;
      break;
    }
  }
  if (!pick) {
    for (const auto& n : nodes.value()) {
      if (n.state != "up" || n.full()) continue;
      if (!pick || n.room() > pick->room()) pick = n;
    }
  }
  if (!pick) return make_error(Errc::kUnavailable, "no node can take a kernel now (none is up with room)");

  KernelRecord row{r.kernel_id, r.owner, r.kernelspec, r.workspace, "", 0, "", r.created, "placing", pick->id};
  row.memory_bytes = r.memory_bytes;
  if (auto s = insert_kernel(db, row); !s) return s.error();
  if (ws->node != pick->id)
    if (auto s = move_workspace(db, r.owner, r.workspace, ws->node, pick->id); !s) return s.error();
  if (auto s = tx->commit(); !s) return s.error();
  return Placement{pick->id, pick->address, ws->node};
}

common::Status unplace_kernel(Database& db, const std::string& kernel_id) {
  auto st = db.prepare("DELETE FROM kernels WHERE id = ? AND state = 'placing'");
  if (!st) return st.error();
  st->bind(1, kernel_id);
  return st->run();
}

}  // namespace cellgate::state
