// SPDX-License-Identifier: BSD-3-Clause
// retention_test: the journal's retention on a real SQLite database and a real workspace store. Age
// drops entries and never a baseline snapshot that a kept entry of its journal starts from; bytes count
// the baseline with the entries and drop it oldest first, deleting the snapshot and saying so.
#include <chrono>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "common/time_format.h"
#include "journal/retention.h"
#include "state/database.h"
#include "state/journal_records.h"
#include "workspace/workspace_manager.h"
#include "../state/state_test_util.h"

using namespace cellgate;
using namespace cellgate::journal;

namespace {

std::string days_ago(int days) {
  return common::iso8601(std::chrono::system_clock::now() - std::chrono::hours(24) * days);
}

state::JournalEntryRow entry(const std::string& kernel, int64_t seq, const std::string& started, int64_t bytes) {
  state::JournalEntryRow e;
  e.kernel_id = kernel;
  e.seq = seq;
  e.owner = "alice";
  e.kind = "execute";
  e.run_by = "alice";
  e.client = "execute";
  e.code = "print(" + std::to_string(seq) + ")";
  e.started = e.ended = started;
  e.status = "ok";
  e.bytes = bytes;
  return e;
}

struct Fixture {
  state::test::TempDir tmp;
  std::string data = tmp.path() + "/data";
  state::Database db = state::Database::open(data).value();
  std::unique_ptr<workspace::WorkspaceManager> workspaces = workspace::WorkspaceManager::open(data, {}).value();

  // A labelled snapshot of alice's workspace `ws` holding one file of `bytes` bytes, as a journal's
  // baseline is taken: its id.
  std::string baseline_snapshot(const std::string& ws, const std::string& kernel, size_t bytes) {
    auto w = workspaces->ensure({"alice", ws});
    REQUIRE(w);
    std::ofstream(w->tree_path() + "/data.bin", std::ios::binary) << std::string(bytes, 'b');
    workspace::SnapshotOptions o;
    o.automatic = false;
    o.label = "journal " + kernel;
    o.only_if_changed = false;
    auto snap = w->snapshot(o);
    REQUIRE(snap);
    return snap->id;
  }

  bool snapshot_exists(const std::string& ws, const std::string& id) {
    auto w = workspaces->open({"alice", ws});
    REQUIRE(w);
    auto list = w->list_snapshots();
    REQUIRE(list);
    for (const auto& s : list.value())
      if (s.id == id) return true;
    return false;
  }

  void journal(const std::string& kernel, const std::string& ws, const std::string& created,
               const std::string& snapshot, int64_t bytes) {
    REQUIRE(state::insert_journal(db, {kernel, "alice", "python3", ws, created}));
    REQUIRE(state::set_journal_baseline(db, kernel, snapshot, "", bytes));
  }

  void entries(std::initializer_list<state::JournalEntryRow> rows) {
    auto stmts = state::EntryStatements::prepare(db);
    REQUIRE(stmts);
    for (const auto& r : rows) REQUIRE(stmts->insert(r));
  }
};

}  // namespace

TEST_CASE("age drops old entries but keeps the baseline that the kept entries start from", "[journal]") {
  Fixture f;
  // A live kernel's journal: one entry past --journal-days, one recent; and a deleted kernel's, all old.
  const auto live = f.baseline_snapshot("w1", "k1", 1000);
  f.journal("k1", "w1", days_ago(40), live, 1000);
  f.entries({entry("k1", 1, days_ago(40), 100), entry("k1", 2, days_ago(1), 100)});
  const auto gone = f.baseline_snapshot("w2", "k2", 1000);
  f.journal("k2", "w2", days_ago(50), gone, 1000);
  f.entries({entry("k2", 1, days_ago(50), 100)});
  REQUIRE(state::set_journal_deleted(f.db, "k2", days_ago(45)));
  // A live kernel whose every entry is old: its journal records on from the same baseline.
  const auto idle = f.baseline_snapshot("w3", "k3", 1000);
  f.journal("k3", "w3", days_ago(60), idle, 1000);
  f.entries({entry("k3", 1, days_ago(60), 100)});

  Retention r(f.db, *f.workspaces, RetentionDefaults{0, 30});
  r.enforce(std::chrono::steady_clock::now());

  auto k1 = state::list_journal_entries(f.db, "k1", 0, 10);
  REQUIRE(k1);
  REQUIRE(k1->size() == 1);
  CHECK(k1->front().seq == 2);
  CHECK(state::get_journal(f.db, "k1")->baseline == live);
  CHECK(state::get_journal(f.db, "k1")->baseline_bytes == 1000);
  CHECK(f.snapshot_exists("w1", live));

  CHECK(state::journal_entry_count(f.db, "k3").value() == 0);
  CHECK(state::get_journal(f.db, "k3")->baseline == idle);
  CHECK(f.snapshot_exists("w3", idle));

  // No entry is left to need it: the deleted kernel's journal goes, its baseline snapshot with it.
  CHECK(state::get_journal(f.db, "k2").error().code == common::Errc::kNotFound);
  CHECK_FALSE(f.snapshot_exists("w2", gone));
  CHECK(state::journal_bytes_of(f.db, "alice").value() == 1000 + 100 + 1000);
}

TEST_CASE("bytes count the baseline with the entries and drop it first, saying so", "[journal]") {
  Fixture f;
  const auto old = f.baseline_snapshot("w1", "k1", 6000);
  f.journal("k1", "w1", days_ago(3), old, 6000);
  f.entries({entry("k1", 1, days_ago(3), 1000), entry("k1", 2, days_ago(2), 1000)});
  const auto recent = f.baseline_snapshot("w2", "k2", 500);
  f.journal("k2", "w2", days_ago(1), recent, 500);
  f.entries({entry("k2", 1, days_ago(1), 1000)});

  Retention r(f.db, *f.workspaces, RetentionDefaults{8000, 0});
  r.charge("alice", 0);  // first sight: the committed sum, 9,500 bytes
  r.enforce(std::chrono::steady_clock::now());

  // Down to 90% of 8,000: the oldest thing, k1's baseline, is enough; every entry stays.
  auto k1 = state::get_journal(f.db, "k1");
  REQUIRE(k1);
  CHECK(k1->baseline.empty());
  CHECK(k1->baseline_bytes == 0);
  CHECK(k1->note.find("journal_bytes") != std::string::npos);
  CHECK_FALSE(f.snapshot_exists("w1", old));
  CHECK(state::journal_entry_count(f.db, "k1").value() == 2);
  CHECK(state::get_journal(f.db, "k2")->baseline == recent);
  CHECK(f.snapshot_exists("w2", recent));
  CHECK(state::journal_bytes_of(f.db, "alice").value() == 3500);
}
