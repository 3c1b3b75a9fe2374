// SPDX-License-Identifier: BSD-3-Clause
// records_test: CRUD of the kernels, sessions, workspaces and snapshots tables.
#include <catch2/catch.hpp>

#include "state/artifact_records.h"
#include "state/database.h"
#include "state/kernel_records.h"
#include "state/workspace_records.h"
#include "state_test_util.h"
#include "test_database.h"

using namespace cellgate::state;
using cellgate::common::Errc;
using cellgate::state::test::TestDatabase;

namespace {

KernelRecord kernel(const std::string& id, const std::string& owner) {
  return KernelRecord{id, owner, "python3", "default", "/run/cellgate/k/" + id, 4242, "/run/cellgate/k/" + id + "/status",
                      "2026-11-29T19:00:00.000000Z", "starting"};
}

}  // namespace

TEST_CASE("kernel rows round-trip and can be re-read for re-adoption", "[state][backends]") {
  TestDatabase tdb;
  auto db = tdb.open();
  REQUIRE(db);
  REQUIRE(insert_kernel(*db, kernel("k1", "alice")));
  REQUIRE(insert_kernel(*db, kernel("k2", "bob")));
  REQUIRE(insert_kernel(*db, kernel("k3", "alice")));

  auto k1 = get_kernel(*db, "k1");
  REQUIRE(k1);
  CHECK(k1->owner == "alice");
  CHECK(k1->kernelspec == "python3");
  CHECK(k1->workspace == "default");
  CHECK(k1->runtime_dir == "/run/cellgate/k/k1");
  CHECK(k1->helper_pid == 4242);
  CHECK(k1->jail_status_file == "/run/cellgate/k/k1/status");
  CHECK(k1->created == "2026-11-29T19:00:00.000000Z");
  CHECK(k1->state == "starting");

  auto dup = insert_kernel(*db, kernel("k1", "bob"));
  REQUIRE_FALSE(dup);
  CHECK(dup.error().code == Errc::kConflict);

  auto all = list_kernels(*db);
  REQUIRE(all);
  REQUIRE(all->size() == 3);
  CHECK((*all)[0].id == "k1");
  CHECK((*all)[2].id == "k3");
  auto alices = list_kernels(*db, std::string("alice"));
  REQUIRE(alices);
  REQUIRE(alices->size() == 2);
  CHECK((*alices)[1].id == "k3");

  REQUIRE(set_kernel_state(*db, "k1", "idle"));
  REQUIRE(set_kernel_helper(*db, "k1", 99, "/elsewhere"));
  k1 = get_kernel(*db, "k1");
  CHECK(k1->state == "idle");
  CHECK(k1->helper_pid == 99);
  CHECK(k1->jail_status_file == "/elsewhere");
  CHECK(set_kernel_state(*db, "nope", "idle").error().code == Errc::kNotFound);

  REQUIRE(delete_kernel(*db, "k2"));
  CHECK(get_kernel(*db, "k2").error().code == Errc::kNotFound);
  CHECK(delete_kernel(*db, "k2").error().code == Errc::kNotFound);
}

TEST_CASE("sessions need their kernel and go with it", "[state][backends]") {
  TestDatabase tdb;
  auto db = tdb.open();
  REQUIRE(db);
  REQUIRE(insert_kernel(*db, kernel("k1", "alice")));
  REQUIRE(insert_kernel(*db, kernel("k2", "alice")));

  auto orphan = insert_session(*db, SessionRow{"s0", "alice", "a.ipynb", "a", "notebook", "no-such-kernel"});
  REQUIRE_FALSE(orphan);
  CHECK(orphan.error().code == Errc::kConflict);  // foreign keys are on

  REQUIRE(insert_session(*db, SessionRow{"s1", "alice", "a.ipynb", "a", "notebook", "k1"}));
  REQUIRE(insert_session(*db, SessionRow{"s2", "bob", "b.ipynb", "b", "notebook", "k2"}));
  auto s1 = get_session(*db, "s1");
  REQUIRE(s1);
  CHECK(s1->path == "a.ipynb");
  CHECK(s1->kernel_id == "k1");

  REQUIRE(update_session(*db, SessionRow{"s1", "ignored", "renamed.ipynb", "r", "console", "k2"}));
  s1 = get_session(*db, "s1");
  CHECK(s1->owner == "alice");
  CHECK(s1->path == "renamed.ipynb");
  CHECK(s1->type == "console");
  CHECK(s1->kernel_id == "k2");

  CHECK(list_sessions(*db)->size() == 2);
  CHECK(list_sessions(*db, std::string("bob"))->size() == 1);

  REQUIRE(delete_kernel(*db, "k2"));  // cascades to both sessions now on k2
  CHECK(list_sessions(*db)->empty());
  CHECK(delete_session(*db, "s1").error().code == Errc::kNotFound);
}

TEST_CASE("workspaces and their snapshot index", "[state][backends]") {
  TestDatabase tdb;
  auto db = tdb.open();
  REQUIRE(db);
  REQUIRE(insert_workspace(*db, WorkspaceRow{"alice", "main", "t1", false}));
  REQUIRE(insert_workspace(*db, WorkspaceRow{"alice", "scratch", "t2", true}));
  REQUIRE(insert_workspace(*db, WorkspaceRow{"bob", "main", "t3", false}));
  CHECK(insert_workspace(*db, WorkspaceRow{"alice", "main", "t4", false}).error().code == Errc::kConflict);

  auto w = get_workspace(*db, "alice", "scratch");
  REQUIRE(w);
  CHECK(w->ephemeral);
  CHECK(w->created == "t2");
  auto alices = list_workspaces(*db, "alice");
  REQUIRE(alices);
  REQUIRE(alices->size() == 2);
  CHECK((*alices)[0].name == "main");

  CHECK(insert_snapshot(*db, SnapshotRow{"alice", "nope", "s", "", "t", false}).error().code == Errc::kConflict);
  REQUIRE(insert_snapshot(*db, SnapshotRow{"alice", "main", "snap-2", "", "2026-01-02", true}));
  REQUIRE(insert_snapshot(*db, SnapshotRow{"alice", "main", "snap-1", "before refactor", "2026-01-01", false}));
  REQUIRE(insert_snapshot(*db, SnapshotRow{"bob", "main", "snap-1", "", "2026-01-01", false}));
  auto snaps = list_snapshots(*db, "alice", "main");
  REQUIRE(snaps);
  REQUIRE(snaps->size() == 2);
  CHECK((*snaps)[0].snapshot_id == "snap-1");  // oldest first
  CHECK((*snaps)[0].label == "before refactor");
  CHECK_FALSE((*snaps)[0].auto_taken);
  CHECK((*snaps)[1].auto_taken);
  REQUIRE(get_snapshot(*db, "bob", "main", "snap-1"));
  REQUIRE(delete_snapshot(*db, "alice", "main", "snap-2"));
  CHECK(get_snapshot(*db, "alice", "main", "snap-2").error().code == Errc::kNotFound);

  REQUIRE(delete_workspace(*db, "alice", "main"));  // cascades to its snapshots only
  CHECK(list_snapshots(*db, "alice", "main")->empty());
  CHECK(list_snapshots(*db, "bob", "main")->size() == 1);
  CHECK(delete_workspace(*db, "alice", "main").error().code == Errc::kNotFound);
}

TEST_CASE("the snapshot index keeps who made each snapshot and what it changed", "[state][backends]") {
  TestDatabase tdb;
  auto db = tdb.open();
  REQUIRE(db);
  REQUIRE(ensure_workspace(*db, WorkspaceRow{"alice", "main", "t1", false}));
  REQUIRE(ensure_workspace(*db, WorkspaceRow{"alice", "main", "t-later", true}));  // exists: left as it is
  CHECK(get_workspace(*db, "alice", "main")->created == "t1");
  REQUIRE(ensure_workspace(*db, WorkspaceRow{"bob", "b", "t2", false}));
  auto all = list_all_workspaces(*db);
  REQUIRE(all);
  REQUIRE(all->size() == 2);
  CHECK((*all)[0].owner == "alice");
  CHECK((*all)[1].owner == "bob");

  SnapshotRow by_kernel{"alice", "main", "00000002-bbbbbbbb", "", "2026-11-29T20:00:00Z", true};
  by_kernel.created_ns = 1764446400000000000;
  by_kernel.parent = "00000001-aaaaaaaa";
  by_kernel.kernel_id = "k-1";
  by_kernel.execution_count = 7;
  by_kernel.added = 2;
  by_kernel.changed = 1;
  by_kernel.removed = 0;
  by_kernel.entries = 12;
  by_kernel.bytes = 4096;
  SnapshotRow rebuilt{"alice", "main", "00000001-aaaaaaaa", "first", "2026-11-29T19:00:00Z", false};
  REQUIRE(insert_snapshot(*db, by_kernel));
  REQUIRE(insert_snapshot(*db, rebuilt));
  CHECK(insert_snapshot(*db, rebuilt).error().code == Errc::kConflict);

  auto rows = list_snapshots(*db, "alice", "main");
  REQUIRE(rows);
  REQUIRE(rows->size() == 2);
  CHECK((*rows)[0].snapshot_id == "00000001-aaaaaaaa");  // by id: the creation counter
  const auto& got = (*rows)[1];
  CHECK(got.created_ns == by_kernel.created_ns);
  CHECK(got.parent == "00000001-aaaaaaaa");
  CHECK(got.kernel_id == "k-1");
  CHECK(got.execution_count == std::optional<int64_t>(7));
  CHECK(got.added == std::optional<int64_t>(2));
  CHECK(got.changed == std::optional<int64_t>(1));
  CHECK(got.removed == std::optional<int64_t>(0));
  CHECK(got.entries == 12);
  CHECK(got.bytes == 4096);
  // Unknown stays unknown (NULL), not 0.
  CHECK_FALSE((*rows)[0].execution_count);
  CHECK_FALSE((*rows)[0].added);
  CHECK((*rows)[0].kernel_id.empty());
  CHECK((*rows)[0].label == "first");
}

TEST_CASE("artifact rows round-trip and list per owner newest first", "[state][backends]") {
  TestDatabase tdb;
  auto db = tdb.open();
  REQUIRE(db);
  ArtifactRow a{"a1", "alice", "report.csv", "ws", "out/report.csv", std::string(64, 'a'), 307203, "text/csv",
                "teacher", "2026-12-04T03:00:00Z", "k1", 7, "00000002-abcdef01"};
  REQUIRE(insert_artifact(*db, a));
  ArtifactRow b{"b2", "alice", "n.txt", "ws", "n.txt", std::string(64, 'b'), 1, "text/plain", "alice",
                "2026-12-04T04:00:00Z"};
  REQUIRE(insert_artifact(*db, b));
  REQUIRE(insert_artifact(*db, ArtifactRow{"c3", "bob", "x", "w", "x", std::string(64, 'c'), 0, "text/plain", "bob",
                                           "2026-12-04T05:00:00Z"}));
  CHECK(insert_artifact(*db, a).error().code == Errc::kConflict);

  auto got = get_artifact(*db, "a1");
  REQUIRE(got);
  CHECK(got->path == "out/report.csv");
  CHECK(got->size == 307203);
  CHECK(got->published_by == "teacher");
  CHECK(got->kernel_id == "k1");
  CHECK(got->execution_count == 7);
  CHECK(got->snapshot == "00000002-abcdef01");
  auto plain = get_artifact(*db, "b2");
  REQUIRE(plain);
  CHECK(!plain->execution_count);
  CHECK(plain->kernel_id.empty());

  auto mine = list_artifacts(*db, std::string("alice"));
  REQUIRE(mine);
  REQUIRE(mine->size() == 2);
  CHECK(mine->at(0).id == "b2");  // newest first
  CHECK(list_artifacts(*db, std::nullopt)->size() == 3);
  CHECK(count_artifacts(*db, "alice").value() == 2);
  CHECK(count_artifacts(*db, "nobody").value() == 0);

  REQUIRE(delete_artifact(*db, "a1"));
  CHECK(delete_artifact(*db, "a1").error().code == Errc::kNotFound);
  CHECK(get_artifact(*db, "a1").error().code == Errc::kNotFound);
}
