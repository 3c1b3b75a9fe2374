// SPDX-License-Identifier: BSD-3-Clause
// gc on a store that cluster nodes share (--store-dir): two nodes (two data dirs) on one store. What any
// node published (held snapshots too) and every pin beside the store is kept; unmarked objects go only
// once older than the age rule; reuse refreshes an object's age; pins move beside the store.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <string>

#include "test_util.h"
#include "two_nodes.h"
#include "workspace/gc.h"
#include "workspace/pins.h"
#include "workspace/published_manifests.h"
#include "workspace/sha256.h"
#include "workspace/workspace_manager.h"

using namespace cellgate::workspace;
using test::TempDir;
using test::age;
using test::mtime;
using test::snap;
using test::TwoNodes;

namespace {

std::string put(ObjectStore& store, const std::string& bytes) {
  ObjectBatch batch(store);
  auto h = batch.put_bytes(bytes);
  REQUIRE(h);
  REQUIRE(batch.commit());
  return h.value();
}

}  // namespace

TEST_CASE("gc on a shared store keeps what any node published or pinned and takes the rest", "[workspace][cluster][gc]") {
  TwoNodes nodes;
  auto ws = nodes.a->ensure({"alice", "w"});
  REQUIRE(ws);
  test::write_text(ws->tree_path() + "/kept.txt", "only node a's manifest names this");
  snap(*ws);
  const std::string in_a = sha256_hex("only node a's manifest names this");
  // An artifact published on node a: its pin is beside the store, where node b's gc sees it.
  const std::string pinned = put(nodes.a->store(), "an artifact of node a");
  REQUIRE(Pins(nodes.a->pins()).add("artifact", "alice", "a1", {pinned}));
  CHECK(nodes.a->pins().path == nodes.store() + "/pins");
  const std::string orphan = put(nodes.b->store(), "nothing names this");

  GcResult r = nodes.gc_on_b();
  CHECK(r.objects_removed == 1);
  CHECK(r.objects_kept == 2);
  CHECK(test::exists(nodes.object(in_a)));
  CHECK(test::exists(nodes.object(pinned)));
  CHECK(!test::exists(nodes.object(orphan)));
  CHECK(ws->restore(ws->head_id()));

  SECTION("a snapshot deleted on its node frees its objects for a gc on another") {
    test::write_text(ws->tree_path() + "/kept.txt", "second");
    const std::string second = snap(*ws);
    auto first = ws->list_snapshots();
    REQUIRE(first);
    REQUIRE(ws->delete_snapshot(first->front().id));
    r = nodes.gc_on_b();
    CHECK(r.objects_removed == 1);
    CHECK(!test::exists(nodes.object(in_a)));
    CHECK(test::exists(nodes.object(sha256_hex("second"))));
  }
  SECTION("without --store-dir gc refuses a store with manifests/ and deletes nothing") {
    auto refused = collect_garbage(nodes.b->store(), {nodes.b->data_dir()});
    REQUIRE(!refused);
    CHECK(refused.error().message.find("--store-dir") != std::string::npos);
  }
}

TEST_CASE("the age rule keeps unmarked objects and temps younger than min_age", "[workspace][cluster][gc]") {
  TwoNodes nodes;
  const std::string young = put(nodes.a->store(), "written for a manifest not published yet");
  const std::string old = put(nodes.a->store(), "left by a snapshot deleted long ago");
  age(nodes.object(old), 7200);
  const std::string temp_young = nodes.store() + "/objects/ab/.tmp-1-young";
  const std::string temp_old = nodes.store() + "/objects/ab/.tmp-1-old";
  test::write_text(temp_young, "a write in flight on another node");
  test::write_text(temp_old, "a crash's leftover");
  age(temp_old, 7200);

  GcResult r = nodes.gc_on_b(std::chrono::hours(1));
  CHECK(r.objects_removed == 1);
  CHECK(r.objects_young == 1);
  CHECK(r.temps_removed == 1);
  CHECK(test::exists(nodes.object(young)));
  CHECK(!test::exists(nodes.object(old)));
  CHECK(test::exists(temp_young));
  CHECK(!test::exists(temp_old));
}

TEST_CASE("an object a new snapshot reuses is touched, so the age rule keeps it", "[workspace][cluster][gc]") {
  TwoNodes nodes;
  const std::string bytes = "the same bytes, stored long ago";
  const std::string hash = put(nodes.a->store(), bytes);
  age(nodes.object(hash), 7200);
  const time_t before = mtime(nodes.object(hash));
  auto ws = nodes.a->ensure({"alice", "r"});
  REQUIRE(ws);
  test::write_text(ws->tree_path() + "/f", bytes);
  // Its manifest is not published yet when node b's gc runs: only the object's age saves it.
  auto unpublished = ws->snapshot({});
  REQUIRE(unpublished);
  REQUIRE(::unlink((nodes.published("r") + "/" + unpublished->id).c_str()) == 0);
  CHECK(mtime(nodes.object(hash)) > before);
  GcResult r = nodes.gc_on_b(std::chrono::hours(1));
  CHECK(r.objects_young == 1);
  CHECK(test::exists(nodes.object(hash)));
}

TEST_CASE("the snapshot kept before restoring from the shared store is held: gc keeps it, catch_up ignores it", "[workspace][cluster][gc]") {
  TwoNodes nodes;
  auto on_a = nodes.a->ensure({"alice", "h"});
  REQUIRE(on_a);
  test::write_text(on_a->tree_path() + "/data.csv", "1");
  snap(*on_a);
  test::write_text(on_a->tree_path() + "/unsaved.txt", "kept on node a when it comes back");
  // Node a is lost; node b restores the workspace and goes on.
  auto on_b = nodes.b->ensure({"alice", "h"});
  REQUIRE(on_b);
  REQUIRE(on_b->catch_up());
  test::write_text(on_b->tree_path() + "/data.csv", "2");
  const std::string newer = snap(*on_b);
  // Node a comes back and is given the workspace again.
  auto back = on_a->catch_up();
  REQUIRE(back);
  REQUIRE(back.value());
  CHECK(*back.value() == newer);
  std::string kept;
  auto list = on_a->list_snapshots();
  REQUIRE(list);
  for (const auto& s : *list)
    if (s.label.rfind("kept before restoring", 0) == 0) kept = s.id;
  REQUIRE(!kept.empty());
  CHECK(test::exists(nodes.published("h") + "/held/" + kept));
  CHECK(!test::exists(nodes.published("h") + "/" + kept));
  auto newest = PublishedManifests(nodes.store(), "alice", "h").newest();
  REQUIRE(newest);
  REQUIRE(newest.value());
  CHECK(newest.value()->id == newer);

  // gc on node b, which never had the kept snapshot, keeps its objects.
  nodes.gc_on_b();
  CHECK(test::exists(nodes.object(sha256_hex("kept on node a when it comes back"))));
  CHECK(on_a->restore(kept));
  CHECK(test::read_text(on_a->tree_path() + "/unsaved.txt") == "kept on node a when it comes back");
  // Deleting it removes its held copy too; then its object goes.
  REQUIRE(on_a->delete_snapshot(kept));
  CHECK(!test::exists(nodes.published("h") + "/held/" + kept));
  nodes.gc_on_b();
  CHECK(!test::exists(nodes.object(sha256_hex("kept on node a when it comes back"))));
}

TEST_CASE("a head whose publish failed is published by the next snapshot call, whole again", "[workspace][cluster][gc]") {
  TwoNodes nodes;
  auto ws = nodes.a->ensure({"alice", "f"});
  REQUIRE(ws);
  test::write_text(ws->tree_path() + "/f", "written while the shared store was away");
  const std::string id = snap(*ws);
  // As if its publish had failed: node b's gc sees nothing of it, and (past the age) takes its object.
  REQUIRE(::unlink((nodes.published("f") + "/" + id).c_str()) == 0);
  nodes.gc_on_b();
  const std::string hash = sha256_hex("written while the shared store was away");
  REQUIRE(!test::exists(nodes.object(hash)));
  // The next execute's snapshot finds the tree unchanged: it writes the object back and publishes.
  auto again = ws->snapshot({});
  REQUIRE(again);
  CHECK(!again->created);
  CHECK(test::exists(nodes.object(hash)));
  CHECK(test::exists(nodes.published("f") + "/" + id));
  nodes.gc_on_b();
  CHECK(test::exists(nodes.object(hash)));
  CHECK(ws->restore(id));
}

TEST_CASE("a data dir's pins move beside the shared store when it is given one, and a cut move finishes", "[workspace][cluster][gc]") {
  TempDir tmp;
  const std::string data = tmp.path() + "/data", store = tmp.path() + "/shared-store";
  const std::string h1(64, 'a'), h2(64, 'b'), h3(64, 'c');
  {
    auto local = WorkspaceManager::open(data, WorkspaceConfig{});
    REQUIRE(local);
    CHECK((*local)->pins().path == data + "/pins");
    Pins pins((*local)->pins());
    REQUIRE(pins.add("journal", "alice", "k1", {h1}));
    REQUIRE(pins.add("artifact", "alice", "a1", {h2}));
  }
  // A move cut short: a1 is beside the store already (with another hash), and still here.
  REQUIRE(::mkdir(store.c_str(), 0700) == 0);
  REQUIRE(Pins(pins_dir(data, store)).add("artifact", "alice", "a1", {h3}));
  WorkspaceConfig shared;
  shared.store_dir = store;
  auto moved = WorkspaceManager::open(data, shared);
  REQUIRE(moved);
  CHECK((*moved)->pins().path == store + "/pins");
  Pins there((*moved)->pins());
  auto k1 = there.read("journal", "alice", "k1");
  REQUIRE(k1);
  CHECK(*k1 == std::vector<std::string>{h1});
  auto a1 = there.read("artifact", "alice", "a1");
  REQUIRE(a1);
  CHECK(a1->size() == 2);
  CHECK(!test::exists(data + "/pins"));
  // Opening again moves nothing and loses nothing.
  auto again = move_local_pins(data, pins_dir(data, store));
  REQUIRE(again);
  CHECK(*again == 0);
  CHECK(there.all()->size() == 3);
}
