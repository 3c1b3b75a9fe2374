// SPDX-License-Identifier: BSD-3-Clause
// database_test: opening, pragmas, migrations, concurrent opens and corrupt files.
#include "state/database.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include <catch2/catch.hpp>

#include "state/schema.h"
#include "state_test_util.h"
#include "test_database.h"

using cellgate::common::Errc;
using cellgate::state::Database;
using cellgate::state::Statement;
using cellgate::state::Transaction;
using cellgate::state::test::TempDir;
using cellgate::state::test::TestDatabase;

namespace {

std::string pragma(Database& db, const char* name) {
  auto st = db.prepare(std::string("PRAGMA ") + name);
  REQUIRE(st);
  auto row = st->step();
  REQUIRE(row);
  REQUIRE(row.value());
  return st->column_text(0);
}

int64_t count(Database& db, const std::string& sql) {
  auto st = db.prepare(sql);
  REQUIRE(st);
  auto row = st->step();
  REQUIRE(row);
  REQUIRE(row.value());
  return st->column_int(0);
}

// Builds a file the way an older cellgate left it: only the migrations up to `version` (without `skip`:
// a branch whose migration landed after a higher-numbered one).
void make_old_database(const std::string& path, int version, int skip = 0) {
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &raw) == SQLITE_OK);
  REQUIRE(sqlite3_exec(raw, "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied TEXT NOT NULL)",
                       nullptr, nullptr, nullptr) == SQLITE_OK);
  for (const auto& m : cellgate::state::migrations()) {
    if (m.version > version) break;
    if (m.version == skip) continue;
    REQUIRE(sqlite3_exec(raw, m.sqlite, nullptr, nullptr, nullptr) == SQLITE_OK);
    std::string ins = "INSERT INTO schema_version VALUES (" + std::to_string(m.version) + ", 'then')";
    REQUIRE(sqlite3_exec(raw, ins.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
  }
  REQUIRE(sqlite3_exec(raw,
                       "INSERT INTO users (name, admin, token_hash, created) VALUES ('old', 1, 'h', 'then');"
                       "INSERT INTO kernels (id, owner, kernelspec, workspace, runtime_dir, created, state) "
                       "VALUES ('k1', 'old', 'python3', 'w', '/run/x', 'then', 'idle')",
                       nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(raw);
}

// Whether another process sees a lock on path (fcntl(2) F_GETLK reports only other processes' locks).
bool locked_for_others(const std::string& path) {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    if (fd < 0 || ::fcntl(fd, F_GETLK, &fl) != 0) ::_exit(2);
    ::_exit(fl.l_type == F_UNLCK ? 1 : 0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) != 2);
  return WEXITSTATUS(status) == 0;
}

}  // namespace

// In WAL mode a connection holds a SHARED lock on the file while it is open: a process closing its last
// connection checkpoints and deletes the WAL only when it can lock the file exclusively. A second
// connection of the same process (the journal's writer beside the io thread's) must not drop the
// first one's lock: close(2) of any fd on the file drops all of the process's locks on it.
TEST_CASE("a second connection leaves the first one's lock on the file", "[state]") {
  TempDir dir;
  auto a = Database::open(dir.path());
  REQUIRE(a);
  const std::string path = dir.file(Database::kFileName);
  REQUIRE(locked_for_others(path));
  auto b = Database::open(dir.path());
  REQUIRE(b);
  CHECK(locked_for_others(path));
  REQUIRE(a->exec("CREATE TABLE t (x INTEGER)"));
  CHECK(locked_for_others(path));
}

TEST_CASE("a fresh data dir gets a migrated database with the pragmas set", "[state]") {
  TempDir tmp;
  const std::string dir = tmp.file("data");
  auto db = Database::open(dir);
  REQUIRE(db);
  CHECK(db->path() == dir + "/cellgate.db");
  auto version = db->schema_version();
  REQUIRE(version);
  CHECK(version.value() == cellgate::state::latest_schema_version());
  CHECK(version.value() >= 2);
  CHECK(pragma(*db, "journal_mode") == "wal");
  CHECK(pragma(*db, "foreign_keys") == "1");
  CHECK(pragma(*db, "synchronous") == "1");  // NORMAL
  CHECK(pragma(*db, "busy_timeout") == "5000");
  for (const char* table : {"users", "kernels", "sessions", "workspaces", "snapshots", "audit_log"})
    CHECK(count(*db, std::string("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='") + table + "'") == 1);
  CHECK(count(*db, "SELECT count(*) FROM schema_version") == static_cast<int64_t>(cellgate::state::migrations().size()));

  struct stat st{};
  REQUIRE(::stat(dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  REQUIRE(::stat(db->path().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
}

TEST_CASE("reopening a current database applies nothing twice", "[state][backends]") {
  TestDatabase tdb;
  { REQUIRE(tdb.open()); }
  auto db = tdb.open();
  REQUIRE(db);
  CHECK(count(*db, "SELECT count(*) FROM schema_version") == static_cast<int64_t>(cellgate::state::migrations().size()));
}

TEST_CASE("an existing older database is migrated forward and keeps its rows", "[state]") {
  TempDir tmp;
  make_old_database(tmp.file("cellgate.db"), 1);
  auto db = Database::open(tmp.path());
  REQUIRE(db);
  CHECK(db->schema_version().value() == cellgate::state::latest_schema_version());
  CHECK(count(*db, "SELECT count(*) FROM sqlite_master WHERE type='index' AND name='kernels_by_owner'") == 1);
  CHECK(count(*db, "SELECT count(*) FROM users WHERE name='old'") == 1);
  CHECK(count(*db, "SELECT count(*) FROM kernels WHERE id='k1'") == 1);
  CHECK(count(*db, "SELECT count(*) FROM schema_version WHERE applied='then'") == 1);
}

TEST_CASE("a migration that landed after a higher-numbered one is still applied", "[state]") {
  TempDir tmp;
  const auto& all = cellgate::state::migrations();
  REQUIRE(all.size() >= 3);
  const int skipped = all[all.size() - 2].version;  // recorded below the highest, as a late branch's is
  make_old_database(tmp.file("cellgate.db"), cellgate::state::latest_schema_version(), skipped);
  auto db = Database::open(tmp.path());
  REQUIRE(db);
  CHECK(count(*db, "SELECT count(*) FROM schema_version WHERE version=" + std::to_string(skipped) + " AND applied<>'then'") == 1);
  CHECK(count(*db, "SELECT count(*) FROM schema_version") == static_cast<int64_t>(all.size()));
}

TEST_CASE("upgrading a version-3 file keeps every row of every table", "[state]") {
  TempDir tmp;
  const std::string path = tmp.file("cellgate.db");
  make_old_database(path, 3);
  // Every table as version 3 knew it, in rowid order.
  const std::vector<std::string> dumps = {
      "SELECT name, admin, token_hash, max_kernels, memory_bytes, cpus, pids, workspace_bytes, workspace_files, "
      "exec_timeout_s, created, max_connections FROM users ORDER BY rowid",
      "SELECT id, owner, kernelspec, workspace, runtime_dir, helper_pid, jail_status_file, created, state FROM kernels "
      "ORDER BY rowid",
      "SELECT id, owner, path, name, type, kernel_id FROM sessions ORDER BY rowid",
      "SELECT owner, name, created, ephemeral FROM workspaces ORDER BY rowid",
      "SELECT owner, workspace, snapshot_id, label, created, auto, created_ns, parent, kernel_id, execution_count, "
      "added, changed, removed, entries, bytes FROM snapshots ORDER BY rowid",
      "SELECT seq, time, user, action, object_kind, object_id, detail, result FROM audit_log ORDER BY seq",
      "SELECT version, applied FROM schema_version ORDER BY version"};
  auto dump_all = [&](sqlite3* raw) {
    std::string out;
    for (const auto& sql : dumps) {
      sqlite3_stmt* st = nullptr;
      REQUIRE(sqlite3_prepare_v2(raw, sql.c_str(), -1, &st, nullptr) == SQLITE_OK);
      while (sqlite3_step(st) == SQLITE_ROW) {
        for (int c = 0; c < sqlite3_column_count(st); ++c) {
          const auto* text = sqlite3_column_text(st, c);
          out += text ? reinterpret_cast<const char*>(text) : "NULL";
          out += '|';
        }
        out += '\n';
      }
      sqlite3_finalize(st);
    }
    return out;
  };
  std::string before;
  {
    sqlite3* raw = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &raw) == SQLITE_OK);
    REQUIRE(sqlite3_exec(raw,
                         "INSERT INTO users (name, admin, token_hash, max_kernels, memory_bytes, cpus, pids, "
                         "workspace_bytes, workspace_files, exec_timeout_s, created, max_connections) VALUES "
                         "('bob', 0, 'h2', 3, 4294967296, 0.5, 64, 1073741824, 1000, 30, 'then', 2);"
                         "INSERT INTO sessions VALUES ('s1', 'old', 'a.ipynb', 'a', 'notebook', 'k1');"
                         "INSERT INTO workspaces VALUES ('old', 'w', 'then', 1);"
                         "INSERT INTO snapshots VALUES ('old', 'w', '00000001-0badf00d', 'l', 'then', 1, 5, '', 'k1', "
                         "7, 1, 2, 3, 10, 2048);"
                         "INSERT INTO audit_log (time, user, action, object_kind, object_id, detail, result) VALUES "
                         "('then', 'old', 'start', 'kernel', 'k1', '{}', 'ok');",
                         nullptr, nullptr, nullptr) == SQLITE_OK);
    before = dump_all(raw);
    sqlite3_close(raw);
  }
  {
    auto db = Database::open(tmp.path());
    REQUIRE(db);
    CHECK(db->schema_version().value() == cellgate::state::latest_schema_version());
    CHECK(count(*db, "SELECT count(*) FROM kernels WHERE node = ''") == 1);
  }
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &raw) == SQLITE_OK);
  const std::string after = dump_all(raw);
  sqlite3_close(raw);
  // The migration rows are appended after the old ones, so the old dump is a prefix of the new one.
  CHECK(after.substr(0, before.size()) == before);
  CHECK(before.find("bob|0|h2|3|4294967296|0.5|64|1073741824|1000|30|then|2|") != std::string::npos);
  CHECK(before.find("00000001-0badf00d|l|then|1|5||k1|7|1|2|3|10|2048|") != std::string::npos);
}

TEST_CASE("a database from a newer cellgate is refused, not downgraded", "[state]") {
  TempDir tmp;
  { REQUIRE(Database::open(tmp.path())); }
  {
    sqlite3* raw = nullptr;
    REQUIRE(sqlite3_open(tmp.file("cellgate.db").c_str(), &raw) == SQLITE_OK);
    REQUIRE(sqlite3_exec(raw, "INSERT INTO schema_version VALUES (999, 'future')", nullptr, nullptr, nullptr) ==
            SQLITE_OK);
    sqlite3_close(raw);
  }
  auto db = Database::open(tmp.path());
  REQUIRE_FALSE(db);
  CHECK_THAT(db.error().message, Catch::Contains("schema version 999 is newer"));
}

TEST_CASE("a corrupted database file gives a clear error naming the file", "[state]") {
  TempDir tmp;
  {
    std::ofstream out(tmp.file("cellgate.db"), std::ios::binary);
    for (int i = 0; i < 512; ++i) out << "this is not an sqlite database ";
  }
  auto db = Database::open(tmp.path());
  REQUIRE_FALSE(db);
  CHECK_THAT(db.error().message, Catch::Contains(tmp.file("cellgate.db")));
  CHECK_THAT(db.error().message, Catch::Contains("file is not a database"));
}

TEST_CASE("an unreadable data dir path is an error, not a crash", "[state]") {
  TempDir tmp;
  { std::ofstream(tmp.file("plainfile")) << "x"; }
  auto db = Database::open(tmp.file("plainfile") + "/sub");
  REQUIRE_FALSE(db);
  CHECK_THAT(db.error().message, Catch::Contains("plainfile"));
}

TEST_CASE("two Database objects on one database see each other's writes", "[state][backends]") {
  TestDatabase tdb;
  auto a = tdb.open();
  auto b = tdb.open();
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(a->exec("INSERT INTO workspaces (owner, name, created) VALUES ('u', 'w1', 't')"));
  CHECK(count(*b, "SELECT count(*) FROM workspaces") == 1);
  {
    // SQLite: a writer holding the lock makes the other wait (busy_timeout) rather than fail at once;
    // committing releases it. Both: readers see the last commit, not the open transaction.
    auto tx = Transaction::begin(*a);
    REQUIRE(tx);
    REQUIRE(a->exec("INSERT INTO workspaces (owner, name, created) VALUES ('u', 'w2', 't')"));
    CHECK(count(*b, "SELECT count(*) FROM workspaces") == 1);
    REQUIRE(tx->commit());
  }
  REQUIRE(b->exec("INSERT INTO workspaces (owner, name, created) VALUES ('u', 'w3', 't')"));
  CHECK(count(*a, "SELECT count(*) FROM workspaces") == 3);
}

TEST_CASE("concurrent first opens of one fresh database all succeed and migrate once", "[state][backends]") {
  TestDatabase tdb;
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::vector<int> ok(kThreads, 0);
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      auto db = tdb.open();
      ok[static_cast<size_t>(i)] = db && db->schema_version().value() == cellgate::state::latest_schema_version();
    });
  for (auto& t : threads) t.join();
  for (int v : ok) CHECK(v == 1);
  auto db = tdb.open();
  REQUIRE(db);
  CHECK(count(*db, "SELECT count(*) FROM schema_version") == static_cast<int64_t>(cellgate::state::migrations().size()));
}

TEST_CASE("a transaction rolls back unless committed", "[state][backends]") {
  TestDatabase tdb;
  auto db = tdb.open();
  REQUIRE(db);
  {
    auto tx = Transaction::begin(*db);
    REQUIRE(tx);
    REQUIRE(db->exec("INSERT INTO workspaces (owner, name, created) VALUES ('u', 'gone', 't')"));
  }
  CHECK(count(*db, "SELECT count(*) FROM workspaces") == 0);
  {
    auto tx = Transaction::begin(*db);
    REQUIRE(tx);
    REQUIRE(tx->lock("cellgate.test"));
    REQUIRE(db->exec("INSERT INTO workspaces (owner, name, created) VALUES ('u', 'kept', 't')"));
    REQUIRE(tx->commit());
  }
  CHECK(count(*db, "SELECT count(*) FROM workspaces") == 1);
}

TEST_CASE("statement errors come back as Result", "[state][backends]") {
  TestDatabase tdb;
  auto db = tdb.open();
  REQUIRE(db);
  // SQLite compiles at prepare, PostgreSQL at the first step: either way the caller gets the error.
  auto bad = db->prepare("SELEKT nonsense");
  auto bad_run = bad ? bad->run() : cellgate::common::Status(bad.error());
  REQUIRE_FALSE(bad_run);
  CHECK_THAT(bad_run.error().message, Catch::Contains("syntax error"));

  auto st = db->prepare("INSERT INTO workspaces (owner, name, created) VALUES (?, ?, ?)");
  REQUIRE(st);
  st->bind(1, "u").bind(2, "w").bind(3, "t");
  REQUIRE(st->run());
  CHECK(db->changes() == 1);
  st->reset();
  st->bind(1, "u").bind(2, "w").bind(3, "t");
  auto dup = st->run();
  REQUIRE_FALSE(dup);
  CHECK(dup.error().code == Errc::kConflict);

  st->reset();
  st->bind(7, "out of range");
  auto bind_error = st->run();
  REQUIRE_FALSE(bind_error);
  CHECK_THAT(bind_error.error().message, Catch::Contains("bind"));

  // Text neither engine stores alike is bad input on both, and the statement runs again after reset.
  for (const std::string& text : {std::string("a\0b", 3), std::string("\xff\xfe")}) {
    st->reset();
    st->bind(1, "u").bind(2, text).bind(3, "t");
    auto refused = st->run();
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == Errc::kBadRequest);
  }
  st->reset();
  st->bind(1, "u").bind(2, "w2").bind(3, "t");
  CHECK(st->run());
  CHECK(count(*db, "SELECT count(*) FROM workspaces") == 2);
}

TEST_CASE("a database with a damaged schema page is refused with a clear error", "[state]") {
  TempDir tmp;
  {
    auto db = Database::open(tmp.path());
    REQUIRE(db);
  }
  {
    // Keep the 100-byte header (so SQLite recognises the file) and scribble over the rest of page 1,
    // the root of sqlite_master.
    std::fstream f(tmp.file("cellgate.db"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    for (int i = 0; i < 400; ++i) f.put(static_cast<char>(0xA5));
  }
  auto db = Database::open(tmp.path());
  REQUIRE_FALSE(db);
  CHECK_THAT(db.error().message, Catch::Contains(tmp.file("cellgate.db")));
  CHECK_THAT(db.error().message, Catch::Contains("malformed"));
}

TEST_CASE("writers on separate connections wait for each other instead of failing", "[state][backends]") {
  TestDatabase tdb;
  REQUIRE(tdb.open());
  constexpr int kThreads = 3;
  constexpr int kRows = 100;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      auto db = tdb.open();
      if (!db) {
        failures[static_cast<size_t>(t)] = kRows;
        return;
      }
      for (int i = 0; i < kRows; ++i) {
        auto st = db->prepare("INSERT INTO workspaces (owner, name, created) VALUES (?, ?, 't')");
        if (!st || !st->bind(1, "u" + std::to_string(t)).bind(2, "w" + std::to_string(i)).run())
          ++failures[static_cast<size_t>(t)];
      }
    });
  for (auto& th : threads) th.join();
  for (int f : failures) CHECK(f == 0);
  auto db = tdb.open();
  REQUIRE(db);
  CHECK(count(*db, "SELECT count(*) FROM workspaces") == kThreads * kRows);
}
