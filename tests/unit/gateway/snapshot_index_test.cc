// SPDX-License-Identifier: BSD-3-Clause
// snapshot_index_test: the database index follows the workspace store, which is the truth for content.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "gateway/snapshot_index.h"
#include "state/workspace_records.h"

using namespace cellgate;

namespace {

struct Scratch {
  std::string path;
  Scratch() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "cellgate-index-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) std::abort();
    path = tmpl;
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

}  // namespace

TEST_CASE("index_snapshot records a snapshot and forgets what retention pruned", "[gateway]") {
  Scratch tmp;
  auto db = state::Database::open(tmp.path + "/data");
  REQUIRE(db);
  workspace::WorkspaceConfig wc;
  wc.keep_auto = 2;
  auto mgr = workspace::WorkspaceManager::open(tmp.path + "/data", wc);
  REQUIRE(mgr);
  workspace::WorkspaceRef ref{"alice", "main"};
  auto ws = (*mgr)->create(ref);
  REQUIRE(ws);
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    write(ws->tree_path() + "/f" + std::to_string(i), "x");
    auto snap = ws->snapshot({});
    REQUIRE(snap);
    REQUIRE(gateway::index_snapshot(*db, ref, *snap, {}, {"k1", i + 1}));
    ids.push_back(snap->id);
    CHECK(snap->parent == (i == 0 ? "" : ids[i - 1]));
  }
  auto rows = state::list_snapshots(*db, "alice", "main");
  REQUIRE(rows);
  REQUIRE(rows->size() == 2);  // the first was pruned by retention and left the index with it
  CHECK((*rows)[0].snapshot_id == ids[1]);
  CHECK((*rows)[1].kernel_id == "k1");
  CHECK((*rows)[1].execution_count == std::optional<int64_t>(3));
  CHECK((*rows)[1].added == std::optional<int64_t>(1));
  CHECK((*rows)[1].entries == 3);
  CHECK((*rows)[1].bytes == 3);
}

TEST_CASE("reconcile rebuilds missing rows and drops rows the store does not have", "[gateway]") {
  Scratch tmp;
  auto db = state::Database::open(tmp.path + "/data");
  REQUIRE(db);
  auto mgr = workspace::WorkspaceManager::open(tmp.path + "/data", {});
  REQUIRE(mgr);
  workspace::WorkspaceRef ref{"bob", "w"};
  auto ws = (*mgr)->create(ref);
  REQUIRE(ws);
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    write(ws->tree_path() + "/f" + std::to_string(i), "y");
    if (i == 2) std::filesystem::remove(ws->tree_path() + "/f0");
    auto snap = ws->snapshot({});
    REQUIRE(snap);
    ids.push_back(snap->id);
  }
  // Only the first is indexed; the database also holds a row for a snapshot and a workspace the store lacks.
  auto first = ws->snapshot({});  // unchanged tree: no new snapshot
  REQUIRE_FALSE(first->created);
  REQUIRE(state::ensure_workspace(*db, {"bob", "w", "t", false}));
  state::SnapshotRow known{"bob", "w", ids[0], "", "t", true};
  known.kernel_id = "k9";
  REQUIRE(state::insert_snapshot(*db, known));
  REQUIRE(state::insert_snapshot(*db, {"bob", "w", "00000042-00000000", "", "t", true}));
  REQUIRE(state::ensure_workspace(*db, {"bob", "gone", "t", false}));
  REQUIRE(state::insert_snapshot(*db, {"bob", "gone", "00000001-00000000", "", "t", true}));

  auto counts = gateway::reconcile_snapshot_index(*db, **mgr);
  REQUIRE(counts);
  CHECK(counts->rebuilt == 2);
  CHECK(counts->dropped == 2);
  auto rows = state::list_snapshots(*db, "bob", "w");
  REQUIRE(rows);
  REQUIRE(rows->size() == 3);
  CHECK((*rows)[0].kernel_id == "k9");  // a row that was right is kept as it was
  CHECK((*rows)[1].snapshot_id == ids[1]);
  CHECK((*rows)[1].parent == ids[0]);
  CHECK((*rows)[1].added == std::optional<int64_t>(1));
  CHECK((*rows)[2].added == std::optional<int64_t>(1));
  CHECK((*rows)[2].removed == std::optional<int64_t>(1));
  CHECK((*rows)[2].entries == 2);
  CHECK(state::get_workspace(*db, "bob", "gone").error().code == common::Errc::kNotFound);
  CHECK(state::list_snapshots(*db, "bob", "gone")->empty());
  // A second pass finds nothing to do.
  auto again = gateway::reconcile_snapshot_index(*db, **mgr);
  REQUIRE(again);
  CHECK(again->rebuilt == 0);
  CHECK(again->dropped == 0);
}
