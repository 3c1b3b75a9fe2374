// SPDX-License-Identifier: BSD-3-Clause
// published manifests: two nodes (two data dirs) sharing one store (--store-dir), as cluster nodes do:
// a workspace whose node was lost is caught up on the next node, and deletions reach the shared copies.
#include <catch2/catch.hpp>

#include <string>

#include "test_util.h"
#include "two_nodes.h"
#include "workspace/gc.h"
#include "workspace/published_manifests.h"
#include "workspace/workspace_manager.h"

using namespace cellgate::workspace;
using cellgate::common::Errc;
using test::TempDir;
using test::exists;
using test::snap;
using test::TwoNodes;

TEST_CASE("a workspace snapshotted on one node is restored on the next one from the shared store", "[workspace][cluster]") {
  TwoNodes nodes;
  auto on_a = nodes.a->ensure({"alice", "w"});
  REQUIRE(on_a);
  test::write_text(on_a->tree_path() + "/data.csv", "x,y\n1,2\n");
  const std::string first = snap(*on_a);
  CHECK(exists(nodes.published("w") + "/" + first));
  // Written after the last snapshot: what a lost node takes with it (the bound is one execution).
  test::write_text(on_a->tree_path() + "/unsaved.txt", "lost with node a");

  auto on_b = nodes.b->ensure({"alice", "w"});
  REQUIRE(on_b);
  auto caught = on_b->catch_up();
  REQUIRE(caught);
  REQUIRE(caught.value());
  CHECK(*caught.value() == first);
  CHECK(test::read_text(on_b->tree_path() + "/data.csv") == "x,y\n1,2\n");
  CHECK(!exists(on_b->tree_path() + "/unsaved.txt"));
  CHECK(on_b->head_id() == first);
  // Caught up: a second call changes nothing.
  auto again = on_b->catch_up();
  REQUIRE(again);
  CHECK(!again.value());

  SECTION("the node that comes back keeps its own later changes as a labelled snapshot, then catches up") {
    test::write_text(on_b->tree_path() + "/data.csv", "x,y\n1,2\n3,4\n");
    const std::string second = snap(*on_b);
    auto back = on_a->catch_up();
    REQUIRE(back);
    REQUIRE(back.value());
    CHECK(*back.value() == second);
    CHECK(test::read_text(on_a->tree_path() + "/data.csv") == "x,y\n1,2\n3,4\n");
    CHECK(!exists(on_a->tree_path() + "/unsaved.txt"));
    auto list = on_a->list_snapshots();
    REQUIRE(list);
    bool kept = false;
    for (const auto& s : *list) {
      if (s.label.rfind("kept before restoring " + second, 0) != 0) continue;
      kept = true;
      auto m = on_a->load_snapshot(s.id);
      REQUIRE(m);
      bool has_unsaved = false;
      for (const auto& e : m->entries) has_unsaved |= e.path == "unsaved.txt";
      CHECK(has_unsaved);
      // Kept on node a only: no node may take it for the workspace's newest state.
      CHECK(!exists(nodes.published("w") + "/" + s.id));
    }
    CHECK(kept);
  }

  SECTION("an older snapshot in the shared store never replaces a newer head") {
    test::write_text(on_b->tree_path() + "/data.csv", "newer");
    const std::string second = snap(*on_b);
    REQUIRE(on_b->delete_snapshot(second));  // the shared store now holds only the older one
    CHECK(!exists(nodes.published("w") + "/" + second));
    auto r = on_b->catch_up();
    REQUIRE(r);
    CHECK(!r.value());
    CHECK(test::read_text(on_b->tree_path() + "/data.csv") == "newer");
  }

  SECTION("a damaged newest manifest gives way to the next newest") {
    test::write_text(on_b->tree_path() + "/data.csv", "second");
    const std::string second = snap(*on_b);
    test::write_text(nodes.published("w") + "/" + second, "not a manifest");
    auto newest = PublishedManifests(nodes.tmp.path() + "/shared-store", "alice", "w").newest();
    REQUIRE(newest);
    REQUIRE(newest.value());
    CHECK(newest.value()->id == first);
  }

  SECTION("a deleted workspace leaves nothing to restore") {
    REQUIRE(nodes.b->remove({"alice", "w"}));
    CHECK(!exists(nodes.published("w")));
    auto fresh = nodes.b->ensure({"alice", "w"});
    REQUIRE(fresh);
    auto r = fresh->catch_up();
    REQUIRE(r);
    CHECK(!r.value());
    CHECK(!exists(fresh->tree_path() + "/data.csv"));
  }
}

TEST_CASE("retention removes the shared copies of the snapshots it prunes", "[workspace][cluster]") {
  WorkspaceConfig config;
  config.keep_auto = 2;
  TwoNodes nodes(config);
  auto ws = nodes.a->ensure({"alice", "r"});
  REQUIRE(ws);
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    test::write_text(ws->tree_path() + "/f", std::to_string(i));
    ids.push_back(snap(*ws));
  }
  CHECK(!exists(nodes.published("r") + "/" + ids[0]));
  CHECK(!exists(nodes.published("r") + "/" + ids[1]));
  CHECK(exists(nodes.published("r") + "/" + ids[2]));
  CHECK(exists(nodes.published("r") + "/" + ids[3]));
}

TEST_CASE("gc deletes nothing in a store that cluster nodes share", "[workspace][cluster]") {
  TwoNodes nodes;
  auto ws = nodes.a->ensure({"alice", "g"});
  REQUIRE(ws);
  test::write_text(ws->tree_path() + "/f", "only node a's manifest names this");
  snap(*ws);
  // Node b's gc sees none of node a's manifests: it must not take node a's objects.
  auto r = collect_garbage(nodes.b->store(), {nodes.b->data_dir()});
  REQUIRE(!r);
  CHECK(r.error().code == Errc::kUnavailable);
  CHECK(r.error().message.find("shared by cluster nodes") != std::string::npos);
}

TEST_CASE("without a store dir nothing is published and catch_up changes nothing", "[workspace]") {
  TempDir tmp;
  auto mgr = WorkspaceManager::open(tmp.path() + "/data", WorkspaceConfig{});
  REQUIRE(mgr);
  auto ws = (*mgr)->ensure({"alice", "p"});
  REQUIRE(ws);
  test::write_text(ws->tree_path() + "/f", "1");
  snap(*ws);
  CHECK(!exists(tmp.path() + "/data/store/manifests"));
  auto r = ws->catch_up();
  REQUIRE(r);
  CHECK(!r.value());
}
