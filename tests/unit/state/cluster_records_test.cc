// SPDX-License-Identifier: BSD-3-Clause
// cluster_records_test: the nodes table (join, renew, sweep) and placement, on both backends.
#include <chrono>
#include <map>
#include <thread>

#include <catch2/catch.hpp>

#include "state/database.h"
#include "state/kernel_records.h"
#include "state/node_records.h"
#include "state/placement.h"
#include "state/workspace_records.h"
#include "test_database.h"

using namespace cellgate::state;
using cellgate::common::Errc;
using cellgate::state::test::TestDatabase;

namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

NodeRow node(const std::string& id, const std::string& address, int64_t memory = 16 * kGiB, std::string state = "up") {
  NodeRow n;
  n.id = id;
  n.address = address;
  n.version = "test";
  n.load = NodeLoad{memory, memory, 0, 0};
  n.state = std::move(state);
  return n;
}

PlacementRequest request(const std::string& id, const std::string& owner, const std::string& ws = "default") {
  PlacementRequest r;
  r.kernel_id = id;
  r.owner = owner;
  r.kernelspec = "python3";
  r.workspace = ws;
  r.created = "2030-01-01T00:00:00.000000Z";
  r.memory_bytes = kGiB;
  return r;
}

// Starts a placed kernel as its node would: the row leaves "placing".
void confirm(Database& db, const std::string& id) {
  auto row = get_kernel(db, id);
  REQUIRE(row);
  row->state = "running";
  REQUIRE(confirm_placed_kernel(db, id, *row));
}

}  // namespace

TEST_CASE("a node joins, renews its lease, and a restart takes a new incarnation", "[state][backends][cluster]") {
  TestDatabase tdb;
  auto db = tdb.open();
  REQUIRE(db);
  auto first = register_node(*db, node("a", "10.0.0.1:8889"), 10000);
  REQUIRE(first);
  CHECK(first->incarnation == 1);
  CHECK(first->previous_state.empty());
  CHECK(renew_node(*db, "a", 1, NodeLoad{8 * kGiB, 4 * kGiB, 3, 0}).value() == Renewal::kRenewed);
  auto row = get_node(*db, "a");
  REQUIRE(row);
  CHECK(row->load.kernels == 3);
  CHECK(row->age_ms < 5000);

  // The same node restarted (same address) within its lease: a new incarnation; the old process, if
  // it still ran, could not renew any more.
  auto again = register_node(*db, node("a", "10.0.0.1:8889"), 10000);
  REQUIRE(again);
  CHECK(again->incarnation == 2);
  CHECK(again->previous_state == "up");
  CHECK(renew_node(*db, "a", 1, NodeLoad{}).value() == Renewal::kLost);
  CHECK(renew_node(*db, "a", 2, NodeLoad{}).value() == Renewal::kRenewed);

  // Another process claiming a live node's id from elsewhere is refused.
  auto clash = register_node(*db, node("a", "10.0.0.9:8889"), 10000);
  REQUIRE_FALSE(clash);
  CHECK(clash.error().code == Errc::kConflict);
  CHECK(clash.error().message.find("10.0.0.1:8889") != std::string::npos);

  CHECK(register_node(*db, node("bad id", "x:1"), 10000).error().code == Errc::kBadRequest);
}

TEST_CASE("what a node reports of itself is clamped", "[state][backends][cluster]") {
  TestDatabase tdb;
  auto db = tdb.open();
  REQUIRE(db);
  REQUIRE(register_node(*db, node("liar", "10.0.0.2:8889"), 10000));
  REQUIRE(renew_node(*db, "liar", 1, NodeLoad{int64_t{1} << 62, int64_t{1} << 62, -5, -1}));
  auto row = get_node(*db, "liar");
  REQUIRE(row);
  CHECK(row->load.memory_total == int64_t{1} << 50);
  CHECK(row->load.memory_free == int64_t{1} << 50);
  CHECK(row->load.kernels == 0);
  CHECK(row->load.max_kernels == 0);
}

TEST_CASE("a sweep declares nodes past their lease lost, once, and their kernels dead", "[state][backends][cluster]") {
  TestDatabase tdb;
  auto db = tdb.open();
  REQUIRE(db);
  REQUIRE(register_node(*db, node("a", "a:1"), 10000));
  REQUIRE(register_node(*db, node("b", "b:1"), 10000));
  REQUIRE(insert_kernel(*db, KernelRecord{"k1", "alice", "python3", "default", "", 0, "", "t", "running", "a"}));
  REQUIRE(insert_kernel(*db, KernelRecord{"k2", "alice", "python3", "default", "", 0, "", "t", "placing", "a"}));
  REQUIRE(insert_kernel(*db, KernelRecord{"k3", "bob", "python3", "default", "", 0, "", "t", "running", "b"}));

  // A long lease: nobody is late.
  auto none = sweep_lost_nodes(*db, 60000);
  REQUIRE(none);
  CHECK(none->empty());
  // a last renewed ten minutes ago, b just now. Set in the row, not slept: a sweep with a lease of
  // milliseconds would also take b on a loaded host, where statements can be that far apart.
  REQUIRE(db->exec("UPDATE nodes SET heartbeat_ms = heartbeat_ms - 600000 WHERE id = 'a'"));
  REQUIRE(renew_node(*db, "b", 1, NodeLoad{}).value() == Renewal::kRenewed);
  auto lost = sweep_lost_nodes(*db, 60000);
  REQUIRE(lost);
  REQUIRE(lost->size() == 1);
  CHECK(lost->front() == "a");
  CHECK(get_node(*db, "a")->state == "lost");
  auto k1 = get_kernel(*db, "k1");
  CHECK(k1->state == "dead");
  CHECK(k1->reason == "node lost");
  CHECK(get_kernel(*db, "k2").error().code == Errc::kNotFound);  // never started: gone
  CHECK(get_kernel(*db, "k3")->state == "running");
  // Idempotent: a second sweeper finds nothing more.
  CHECK(sweep_lost_nodes(*db, 60000)->empty());
  // The lost node cannot renew; it rejoins knowing it was lost.
  CHECK(renew_node(*db, "a", 1, NodeLoad{}).value() == Renewal::kLost);
  auto back = register_node(*db, node("a", "a:1"), 10000);
  REQUIRE(back);
  CHECK(back->previous_state == "lost");
  CHECK(get_kernel(*db, "k1")->state == "dead");  // what was declared dead stays dead
}

TEST_CASE("placement spreads by uncommitted memory, keeps workspaces on their node, and skips the full",
          "[state][backends][cluster]") {
  TestDatabase tdb;
  auto db = tdb.open();
  REQUIRE(db);
  for (const char* id : {"a", "b", "c"}) REQUIRE(register_node(*db, node(id, std::string(id) + ":1"), 10000));
  std::map<std::string, int> per_node;
  for (int i = 0; i < 30; ++i) {
    auto p = place_kernel(*db, request("k" + std::to_string(i), "alice", "ws" + std::to_string(i)));
    REQUIRE(p);
    ++per_node[p->node];
    CHECK(p->address == p->node + ":1");
  }
  CHECK(per_node == std::map<std::string, int>{{"a", 10}, {"b", 10}, {"c", 10}});

  // A workspace's next kernel joins the node that holds it.
  auto first = place_kernel(*db, request("w1", "bob", "shared"));
  REQUIRE(first);
  CHECK(first->previous_node.empty());
  for (int i = 2; i <= 4; ++i) {
    auto p = place_kernel(*db, request("w" + std::to_string(i), "bob", "shared"));
    REQUIRE(p);
    CHECK(p->node == first->node);
    CHECK(p->previous_node == first->node);
  }
  CHECK(get_workspace(*db, "bob", "shared")->node == first->node);

  // A draining node takes no new workspace, and a full one none at all.
  REQUIRE(set_node_state(*db, "a", "draining"));
  REQUIRE(renew_node(*db, "b", 1, NodeLoad{16 * kGiB, 16 * kGiB, 0, 10}).value() == Renewal::kRenewed);
  for (int i = 0; i < 5; ++i) {
    auto p = place_kernel(*db, request("d" + std::to_string(i), "carol", "c" + std::to_string(i)));
    REQUIRE(p);
    CHECK(p->node == "c");
  }
  REQUIRE(renew_node(*db, "c", 1, NodeLoad{16 * kGiB, 16 * kGiB, 0, 1}).value() == Renewal::kRenewed);
  auto none = place_kernel(*db, request("x", "carol", "fresh"));
  REQUIRE_FALSE(none);
  CHECK(none.error().code == Errc::kUnavailable);
  CHECK(get_kernel(*db, "x").error().code == Errc::kNotFound);  // nothing half-written
}

TEST_CASE("the quota counts an owner's kernels on every node, dead ones excepted", "[state][backends][cluster]") {
  TestDatabase tdb;
  auto db = tdb.open();
  REQUIRE(db);
  for (const char* id : {"a", "b"}) REQUIRE(register_node(*db, node(id, std::string(id) + ":1"), 10000));
  auto r = request("k1", "alice", "w1");
  r.max_user_kernels = 2;
  REQUIRE(place_kernel(*db, r));
  confirm(*db, "k1");
  r.kernel_id = "k2";
  r.workspace = "w2";
  auto second = place_kernel(*db, r);
  REQUIRE(second);
  r.kernel_id = "k3";
  r.workspace = "w3";
  auto third = place_kernel(*db, r);
  REQUIRE_FALSE(third);
  CHECK(third.error().code == Errc::kForbidden);
  CHECK(third.error().message == "quota exceeded: max_kernels (2) for user alice");
  // A start that failed gives its place back; a dead kernel no longer counts.
  REQUIRE(unplace_kernel(*db, "k2"));
  REQUIRE(place_kernel(*db, r));
  r.kernel_id = "k4";
  CHECK(place_kernel(*db, r).error().code == Errc::kForbidden);
  REQUIRE(set_kernel_dead(*db, "k1", "exited"));
  CHECK(get_kernel(*db, "k1")->reason == "exited");
  REQUIRE(set_kernel_dead(*db, "k1", "again"));
  CHECK(get_kernel(*db, "k1")->reason == "exited");
  REQUIRE(place_kernel(*db, r));
}

TEST_CASE("placement needs a live node", "[state][backends][cluster]") {
  TestDatabase tdb;
  auto db = tdb.open();
  REQUIRE(db);
  auto none = place_kernel(*db, request("k", "alice"));
  REQUIRE_FALSE(none);
  CHECK(none.error().code == Errc::kUnavailable);
  REQUIRE(register_node(*db, node("a", "a:1"), 10000));
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  auto r = request("k", "alice");
  r.lease_ms = 10;  // a's heartbeat is older than this
  CHECK(place_kernel(*db, r).error().code == Errc::kUnavailable);
  r.lease_ms = 60000;
  CHECK(place_kernel(*db, r).value().node == "a");
}
