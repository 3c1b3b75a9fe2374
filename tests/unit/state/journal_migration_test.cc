// SPDX-License-Identifier: BSD-3-Clause
// journal_migration_test: a database a version-10 gateway left, with journal entries, migrated to the latest
// schema: every entry is still there, byte for byte, and the table still does its job. A guard for any later
// migration that rebuilds journal_entries (SQLite changes a table's storage or key only by copying its rows).
#include <libpq-fe.h>
#include <sqlite3.h>

#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "state/database.h"
#include "state/journal_records.h"
#include "state/schema.h"
#include "test_database.h"

using namespace cellgate::state;
using cellgate::common::Errc;
using cellgate::state::test::TestDatabase;

namespace {

constexpr int kOldVersion = 10;
constexpr const char* kDump =
    "SELECT kernel_id, seq, owner, kind, msg_id, run_by, client, session, silent, code, started, ended, status, "
    "execution_count, outputs, snapshot_before, snapshot_after, bytes, blobs, detail FROM journal_entries "
    "ORDER BY kernel_id, seq";

// The engine's own client, no cellgate code between: what a version-10 gateway left, and what is there now.
// Each call runs the statements given (several for SQLite, one for PostgreSQL) and returns their rows as
// text, "NULL" for a null, '|' after each field.
std::string raw(const TestDatabase& tdb, const std::string& sql) {
  std::string out;
  if (tdb.spec().empty()) {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open((tdb.dir() + "/" + Database::kFileName).c_str(), &db) == SQLITE_OK);
    auto row = [](void* to, int n, char** values, char**) {
      auto& s = *static_cast<std::string*>(to);
      for (int i = 0; i < n; ++i) s += std::string(values[i] ? values[i] : "NULL") + "|";
      s += '\n';
      return 0;
    };
    char* error = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), row, &out, &error);
    INFO((error ? error : ""));
    sqlite3_free(error);
    sqlite3_close(db);
    REQUIRE(rc == SQLITE_OK);
    return out;
  }
  PGconn* c = PQconnectdb(tdb.spec().c_str());
  REQUIRE(PQstatus(c) == CONNECTION_OK);
  PGresult* r = PQexec(c, sql.c_str());
  const auto status = PQresultStatus(r);
  INFO(PQerrorMessage(c));
  const bool ok = status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
  if (ok)
    for (int i = 0; i < PQntuples(r); ++i) {
      for (int f = 0; f < PQnfields(r); ++f)
        out += std::string(PQgetisnull(r, i, f) ? "NULL" : PQgetvalue(r, i, f)) + "|";
      out += '\n';
    }
  PQclear(r);
  PQfinish(c);
  REQUIRE(ok);
  return out;
}

std::string two(int n) { return (n < 10 ? "0" : "") + std::to_string(n); }

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("''") : std::string(1, ch);
  return out + "'";
}

// The schema as version 10 left it, with two journals and their entries: short ones, an unfinished one
// (no execution count), text that is not ASCII, and rows larger than a page (SQLite stores the part
// of a row past what a page holds elsewhere, and does so earlier in a table without rowid).
void make_version_10(const TestDatabase& tdb) {
  raw(tdb, "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied TEXT NOT NULL)");
  const BackendKind kind = tdb.spec().empty() ? BackendKind::kSqlite : BackendKind::kPostgres;
  for (const auto& m : migrations()) {
    if (m.version > kOldVersion) break;
    raw(tdb, m.sql(kind));
    raw(tdb, "INSERT INTO schema_version VALUES (" + std::to_string(m.version) + ", 'then')");
  }
  raw(tdb,
      "INSERT INTO journals (kernel_id, owner, kernelspec, workspace, created, baseline_bytes) VALUES "
      "('kb', 'bob', 'python3', 'default', '2026-12-01T09:00:00.000000Z', 4096)");
  raw(tdb,
      "INSERT INTO journals (kernel_id, owner, kernelspec, workspace, created) VALUES "
      "('ka', 'alice', 'python3', 'default', '2026-12-01T10:00:00.000000Z')");
  const std::string big(9000, 'x');
  for (int seq = 1; seq <= 120; ++seq)
    for (const char* kernel : {"kb", "ka"}) {
      const std::string owner = kernel[1] == 'a' ? "alice" : "bob";
      const bool running = seq == 120;
      const std::string code = seq % 7 == 0 ? "print('héllo wörld ✓')" : "1+" + std::to_string(seq);
      const std::string outputs = seq % 10 == 0
          ? R"([{"msg_type":"stream","content":{"name":"stdout","text":")" + big + R"("}}])"
          : R"([{"msg_type":"execute_result","content":{"data":{"text/plain":")" + std::to_string(seq + 1) +
                R"("},"metadata":{},"execution_count":)" + std::to_string(seq) + "}}]";
      raw(tdb, "INSERT INTO journal_entries (kernel_id, seq, owner, kind, msg_id, run_by, client, session, silent, "
               "code, started, ended, status, execution_count, outputs, snapshot_before, snapshot_after, bytes, "
               "blobs, detail) VALUES (" +
                   quoted(kernel) + ", " + std::to_string(seq) + ", " + quoted(owner) + ", 'execute', 'm" +
                   std::to_string(seq) + "', " + quoted(owner) + ", 'websocket', 's1', " + (seq % 5 == 0 ? "1" : "0") +
                   ", " + quoted(code) + ", '2026-12-01T10:" + two(seq / 60) + ":" + two(seq % 60) + ".000000Z', " + (running ? "''" : "'2026-12-01T10:01:00.000000Z'") + ", " +
                   (running ? "'running'" : "'ok'") + ", " + (running ? "NULL" : std::to_string(seq)) + ", " +
                   quoted(outputs) + ", '', " + (seq % 3 == 0 ? "'00000003-abcd'" : "''") + ", " +
                   std::to_string(300 + seq) + ", " + (seq % 10 == 0 ? quoted(std::string(64, 'f')) : "''") +
                   ", '{}')");
    }
}

}  // namespace

TEST_CASE("migrating a version-10 database keeps every journal entry", "[state][backends]") {
  TestDatabase tdb;
  make_version_10(tdb);
  const std::string before = raw(tdb, kDump);
  REQUIRE(std::count(before.begin(), before.end(), '\n') == 240);

  auto db = tdb.open();
  REQUIRE(db);
  CHECK(db->schema_version().value() == latest_schema_version());
  CHECK(raw(tdb, kDump) == before);

  // Read back through the journal's own functions, as the API reads them.
  auto rows = list_journal_entries(*db, "ka", 0, 1000);
  REQUIRE(rows);
  REQUIRE(rows->size() == 120);
  CHECK(rows->at(6).code == "print('héllo wörld ✓')");
  CHECK(rows->at(9).outputs.size() > 9000);
  CHECK(rows->at(9).blobs == std::string(64, 'f'));
  CHECK(rows->at(4).silent);
  CHECK(rows->at(119).status == "running");
  CHECK(rows->at(119).execution_count == std::nullopt);
  CHECK(max_journal_seq(*db, "kb").value() == 120);
  CHECK(journal_bytes_of(*db, "bob").value() == 4096 + 120 * 300 + 120 * 121 / 2);
  CHECK(last_journal_snapshot(*db, "ka").value() == "00000003-abcd");
  auto oldest = oldest_journal_entries(*db, "alice", 2);
  REQUIRE(oldest);
  REQUIRE(oldest->size() == 2);
  CHECK(oldest->at(0).seq == 1);

  // The table keeps its rules: a journal's key, its foreign key, its cascade and its index by owner.
  auto stmts = EntryStatements::prepare(*db);
  REQUIRE(stmts);
  JournalEntryRow e{"ka", 121, "alice", "execute"};
  e.started = "2026-12-01T10:02:00.000000Z";
  e.status = "ok";
  REQUIRE(stmts->insert(e));
  CHECK(stmts->insert(e).error().code == Errc::kConflict);
  e.kernel_id = "gone";
  CHECK(stmts->insert(e).error().code == Errc::kConflict);
  REQUIRE(delete_journal(*db, "kb"));
  CHECK(journal_entry_count(*db, "kb").value() == 0);
  CHECK(journal_entry_count(*db, "ka").value() == 121);
  if (!tdb.spec().empty()) return;
  CHECK(raw(tdb, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'journal_entries_by_owner'") ==
        "1|\n");
  CHECK(raw(tdb, "PRAGMA integrity_check") == "ok|\n");
}
