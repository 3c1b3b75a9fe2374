// SPDX-License-Identifier: BSD-3-Clause
// journal_records_test: the journal's tables on both backends: a journal and its entries round-trip,
// entries need their journal and go with it, running ones are ended after a crash, and what retention
// reads (bytes per owner, oldest first, blobs, empty journals of deleted kernels).
#include <catch2/catch.hpp>

#include "state/database.h"
#include "state/journal_records.h"
#include "test_database.h"

using namespace cellgate::state;
using cellgate::common::Errc;
using cellgate::state::test::TestDatabase;

namespace {

JournalEntryRow entry(const std::string& kernel, int64_t seq, const std::string& owner, const std::string& started,
                      int64_t bytes) {
  JournalEntryRow e;
  e.kernel_id = kernel;
  e.seq = seq;
  e.owner = owner;
  e.kind = "execute";
  e.run_by = owner;
  e.client = "execute";
  e.code = "print(" + std::to_string(seq) + ")";
  e.started = started;
  e.status = "running";
  e.bytes = bytes;
  return e;
}

}  // namespace

TEST_CASE("journal entries round-trip, need their journal and go with it", "[state][backends]") {
  TestDatabase tdb;
  auto db = tdb.open();
  REQUIRE(db);
  REQUIRE(insert_journal(*db, {"k1", "alice", "python3", "default", "2026-12-03T10:00:00.000000Z"}));
  CHECK(insert_journal(*db, {"k1", "alice", "python3", "default", "x"}).error().code == Errc::kConflict);
  auto stmts = EntryStatements::prepare(*db);
  REQUIRE(stmts);
  CHECK(stmts->insert(entry("nope", 1, "alice", "t", 1)).error().code == Errc::kConflict);  // foreign key
  auto e1 = entry("k1", 1, "alice", "2026-12-03T10:00:01.000000Z", 100);
  e1.code = "print('héllo')\n";
  e1.execution_count = 7;
  e1.silent = true;
  e1.outputs = R"([{"msg_type":"stream","content":{"name":"stdout","text":"héllo\n"}}])";
  e1.detail = R"({"reason":"x"})";
  REQUIRE(stmts->insert(e1));
  e1.status = "ok";
  e1.ended = "2026-12-03T10:00:02.000000Z";
  e1.snapshot_after = "00000002-abcd";
  e1.bytes = 150;
  e1.blobs = std::string(64, 'a');
  REQUIRE(stmts->finish(e1));
  REQUIRE(stmts->insert(entry("k1", 2, "alice", "2026-12-03T10:00:03.000000Z", 50)));

  auto got = list_journal_entries(*db, "k1", 0, 10);
  REQUIRE(got);
  REQUIRE(got->size() == 2);
  const auto& g = (*got)[0];
  CHECK(g.code == "print('héllo')\n");
  CHECK(g.execution_count == 7);
  CHECK(g.silent);
  CHECK(g.status == "ok");
  CHECK(g.snapshot_after == "00000002-abcd");
  CHECK(g.outputs == e1.outputs);
  CHECK(g.detail == e1.detail);
  CHECK((*got)[1].execution_count == std::nullopt);
  CHECK(list_journal_entries(*db, "k1", 1, 10)->size() == 1);
  CHECK(max_journal_seq(*db, "k1").value() == 2);
  CHECK(max_journal_seq(*db, "k2").value() == 0);
  CHECK(last_journal_snapshot(*db, "k1").value() == "00000002-abcd");
  CHECK(journal_bytes_of(*db, "alice").value() == 200);
  CHECK(journal_blobs(*db, "k1").value() == std::vector<std::string>{std::string(64, 'a')});

  // A crashed gateway left entry 2 running.
  CHECK(end_running_entries(*db, "k1", "interrupted", "2026-12-03T11:00:00.000000Z").value() == 1);
  CHECK(list_journal_entries(*db, "k1", 1, 10)->at(0).status == "interrupted");

  auto oldest = oldest_journal_entries(*db, "alice", 1);
  REQUIRE(oldest);
  REQUIRE(oldest->size() == 1);
  CHECK((*oldest)[0].seq == 1);
  CHECK(oldest_journal_entries(*db, "alice", 10, std::string("2026-12-03T10:00:02")).value().size() == 1);

  REQUIRE(set_journal_deleted(*db, "k1", "2026-12-03T12:00:00.000000Z"));
  CHECK(empty_deleted_journals(*db).value().empty());
  REQUIRE(delete_journal_entry(*db, "k1", 1));
  REQUIRE(delete_journal_entry(*db, "k1", 2));
  CHECK(delete_journal_entry(*db, "k1", 2).error().code == Errc::kNotFound);
  auto empty = empty_deleted_journals(*db);
  REQUIRE(empty);
  REQUIRE(empty->size() == 1);
  CHECK((*empty)[0].kernel_id == "k1");

  REQUIRE(stmts->insert(entry("k1", 3, "alice", "t", 1)));
  REQUIRE(delete_journal(*db, "k1"));  // its entries go with it
  CHECK(journal_entry_count(*db, "k1").value() == 0);
  CHECK(get_journal(*db, "k1").error().code == Errc::kNotFound);
}

TEST_CASE("journals list per owner and keep their baseline", "[state][backends]") {
  TestDatabase tdb;
  auto db = tdb.open();
  REQUIRE(db);
  REQUIRE(insert_journal(*db, {"k1", "alice", "python3", "default", "2026-12-03T10:00:00.000000Z"}));
  REQUIRE(insert_journal(*db, {"k2", "bob", "python3", "w", "2026-12-03T10:00:01.000000Z"}));
  REQUIRE(set_journal_baseline(*db, "k1", "00000001-ffff", "", 5000));
  CHECK(set_journal_baseline(*db, "zz", "x", "", 0).error().code == Errc::kNotFound);
  CHECK(get_journal(*db, "k1")->baseline == "00000001-ffff");
  CHECK(get_journal(*db, "k1")->baseline_bytes == 5000);
  // The baseline is charged to its owner, and is the oldest thing of its journal.
  auto stmts = EntryStatements::prepare(*db);
  REQUIRE(stmts);
  REQUIRE(stmts->insert(entry("k1", 1, "alice", "2026-12-03T10:00:02.000000Z", 100)));
  CHECK(journal_bytes_of(*db, "alice").value() == 5100);
  CHECK(journal_bytes_of(*db, "bob").value() == 0);
  auto oldest = oldest_journal_entries(*db, "alice", 10, std::nullopt, true);
  REQUIRE(oldest);
  REQUIRE(oldest->size() == 2);
  CHECK((*oldest)[0].kernel_id == "k1");
  CHECK((*oldest)[0].seq == 0);
  CHECK((*oldest)[0].bytes == 5000);
  CHECK((*oldest)[1].seq == 1);
  CHECK(oldest_journal_entries(*db, "alice", 10).value().size() == 1);  // entries only
  REQUIRE(set_journal_baseline(*db, "k1", "", "dropped", 0));
  CHECK(journal_bytes_of(*db, "alice").value() == 100);
  CHECK(list_journals(*db, std::string("alice"))->size() == 1);
  CHECK(list_journals(*db, std::nullopt)->size() == 2);
  CHECK(journal_owners(*db).value() == std::vector<std::string>{"alice", "bob"});
}

TEST_CASE("entries go in together in multi-row inserts, in order; a failing chunk names how far it got", "[state][backends]") {
  TestDatabase tdb;
  auto db = tdb.open();
  REQUIRE(db);
  REQUIRE(insert_journal(*db, {"k1", "alice", "python3", "default", "2026-12-03T10:00:00.000000Z"}));
  auto stmts = EntryStatements::prepare(*db);
  REQUIRE(stmts);
  // 21 rows: one chunk of 16, one of 4, one single.
  std::vector<JournalEntryRow> rows;
  for (int64_t seq = 1; seq <= 21; ++seq) rows.push_back(entry("k1", seq, "alice", "2026-12-03T10:00:01.000000Z", seq));
  std::vector<const JournalEntryRow*> ptrs;
  for (const auto& r : rows) ptrs.push_back(&r);
  size_t written = 99;
  REQUIRE(stmts->insert(ptrs, written));
  CHECK(written == 21);
  auto got = list_journal_entries(*db, "k1", 0, 100);
  REQUIRE(got);
  REQUIRE(got->size() == 21);
  for (size_t i = 0; i < got->size(); ++i) {
    CHECK((*got)[i].seq == static_cast<int64_t>(i + 1));
    CHECK((*got)[i].code == rows[i].code);
    CHECK((*got)[i].bytes == rows[i].bytes);
  }
  // 22..37 then a duplicate (seq 5) in the second chunk: the first 16 are in, that chunk is not.
  std::vector<JournalEntryRow> more;
  for (int64_t seq = 22; seq <= 37; ++seq) more.push_back(entry("k1", seq, "alice", "2026-12-03T10:00:02.000000Z", 1));
  more.push_back(entry("k1", 38, "alice", "2026-12-03T10:00:02.000000Z", 1));
  more.push_back(entry("k1", 5, "alice", "2026-12-03T10:00:02.000000Z", 1));
  more.push_back(entry("k1", 39, "alice", "2026-12-03T10:00:02.000000Z", 1));
  more.push_back(entry("k1", 40, "alice", "2026-12-03T10:00:02.000000Z", 1));
  ptrs.clear();
  for (const auto& r : more) ptrs.push_back(&r);
  auto st = stmts->insert(ptrs, written);
  REQUIRE_FALSE(st);
  CHECK(st.error().code == Errc::kConflict);
  CHECK(written == 16);
  CHECK(max_journal_seq(*db, "k1").value() == 37);
  CHECK(journal_entry_count(*db, "k1").value() == 37);
}
