// SPDX-License-Identifier: BSD-3-Clause
// postgres_test: what only the PostgreSQL backend has: its schema matches SQLite's, and lost
// connections, unresponsive servers, stuck statements and a second node fail clearly, then recover.
#include <signal.h>

#include <chrono>
#include <map>
#include <thread>

#include <catch2/catch.hpp>

#include "state/database.h"
#include "state/placeholders.h"
#include "state/postgres_link.h"
#include "state/schema.h"
#include "state/users.h"
#include "test_database.h"

using namespace cellgate::state;
using cellgate::common::Errc;
using cellgate::state::test::TestDatabase;
using Clock = std::chrono::steady_clock;

namespace {

std::string one_text(Database& db, const std::string& sql) {
  auto st = db.prepare(sql);
  REQUIRE(st);
  auto row = st->step();
  REQUIRE(row);
  REQUIRE(row.value());
  return st->column_text(0);
}

// table → "column:nullable" lines, in column order, from each engine's own catalog.
using Columns = std::map<std::string, std::vector<std::string>>;

Columns columns_of(Database& db) {
  Columns out;
  const char* sql = db.kind() == BackendKind::kPostgres
                        ? "SELECT table_name, column_name, is_nullable FROM information_schema.columns WHERE "
                          "table_schema = 'public' AND column_name <> 'rowid' ORDER BY table_name, ordinal_position"
                        : "SELECT m.name, p.name, CASE WHEN p.\"notnull\" = 1 OR p.pk > 0 THEN 'NO' ELSE 'YES' END "
                          "FROM sqlite_master m, pragma_table_info(m.name) p WHERE m.type = 'table' AND m.name NOT "
                          "LIKE 'sqlite_%' ORDER BY m.name, p.cid";
  auto st = db.prepare(sql);
  REQUIRE(st);
  for (;;) {
    auto row = st->step();
    REQUIRE(row);
    if (!row.value()) break;
    out[st->column_text(0)].push_back(st->column_text(1) + ":" + st->column_text(2));
  }
  return out;
}

// Polls until a statement succeeds again (the reconnect thread's work), at most `within`.
bool recovers(Database& db, std::chrono::seconds within) {
  const auto deadline = Clock::now() + within;
  while (Clock::now() < deadline) {
    if (db.schema_version()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

int backend_pid(Database& db) { return std::stoi(one_text(db, "SELECT pg_backend_pid()")); }

}  // namespace

TEST_CASE("the PostgreSQL schema has the same tables and columns as SQLite's", "[postgres]") {
  TestDatabase pg;
  cellgate::state::test::TempDir tmp;
  auto p = pg.open();
  auto s = Database::open(tmp.path());
  REQUIRE(p);
  REQUIRE(s);
  REQUIRE(p->kind() == BackendKind::kPostgres);
  const auto pg_columns = columns_of(*p);
  CHECK(pg_columns.size() == 11);  // the ten tables and schema_version
  CHECK(pg_columns == columns_of(*s));
  CHECK(p->schema_version().value() == latest_schema_version());
}

TEST_CASE("PostgreSQL sorts text as SQLite does, whatever the server's locale", "[postgres]") {
  TestDatabase pg;
  auto db = pg.open();
  REQUIRE(db);
  UserStore users(*db);
  for (const char* name : {"bob", "Alice", "_x", "alice", "Bob"}) REQUIRE(users.add_user(name, false, {}));
  auto list = users.list_users();
  REQUIRE(list);
  std::vector<std::string> names;
  for (const auto& u : *list) names.push_back(u.name);
  CHECK(names == std::vector<std::string>{"Alice", "Bob", "_x", "alice", "bob"});  // bytewise
}

TEST_CASE("a lost connection fails at once with kUnavailable, then the next calls recover", "[postgres]") {
  TestDatabase pg;
  auto db = pg.open();
  REQUIRE(db);
  UserStore users(*db);
  auto token = users.add_user("alice", false, {});
  REQUIRE(token);
  const int pid = backend_pid(*db);
  cellgate::state::test::admin_exec("SELECT pg_terminate_backend(" + std::to_string(pid) + ")");

  const auto start = Clock::now();
  auto lost = users.authenticate(token.value());
  REQUIRE_FALSE(lost);
  CHECK(lost.error().code == Errc::kUnavailable);
  CHECK_THAT(lost.error().message, Catch::Contains("state database unavailable"));
  CHECK(lost.error().message.find('\n') == std::string::npos);
  CHECK(Clock::now() - start < std::chrono::seconds(2));

  REQUIRE(recovers(*db, std::chrono::seconds(15)));
  CHECK(backend_pid(*db) != pid);
  auto again = users.authenticate(token.value());
  REQUIRE(again);
  REQUIRE(again.value());
  CHECK(again.value()->name == "alice");
}

TEST_CASE("a transaction whose connection is lost never continues on the next one", "[postgres]") {
  TestDatabase pg;
  auto db = pg.open();
  REQUIRE(db);
  {
    auto tx = Transaction::begin(*db);
    REQUIRE(tx);
    REQUIRE(db->exec("INSERT INTO workspaces (owner, name, created) VALUES ('u', 'before', 't')"));
    cellgate::state::test::admin_exec("SELECT pg_terminate_backend(" + std::to_string(backend_pid(*db)) + ")");
    // Statements fail until the transaction ends, even once a new connection is there.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    for (int i = 0; i < 3; ++i) {
      auto after = db->exec("INSERT INTO workspaces (owner, name, created) VALUES ('u', 'after', 't')");
      REQUIRE_FALSE(after);
      CHECK(after.error().code == Errc::kUnavailable);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    CHECK_FALSE(tx->commit());
  }
  REQUIRE(recovers(*db, std::chrono::seconds(15)));
  CHECK(one_text(*db, "SELECT count(*) FROM workspaces") == "0");
  auto tx = Transaction::begin(*db);
  REQUIRE(tx);
  REQUIRE(db->exec("INSERT INTO workspaces (owner, name, created) VALUES ('u', 'new', 't')"));
  REQUIRE(tx->commit());
  CHECK(one_text(*db, "SELECT count(*) FROM workspaces") == "1");
}

TEST_CASE("a statement past its timeout is ended by the server; the connection stays", "[postgres]") {
  TestDatabase pg;
  DatabaseOptions options;
  options.statement_timeout = std::chrono::milliseconds(500);
  auto db = pg.open(options);
  REQUIRE(db);
  const int pid = backend_pid(*db);
  const auto start = Clock::now();
  auto slow = db->exec("SELECT pg_sleep(5)");
  REQUIRE_FALSE(slow);
  CHECK(slow.error().code == Errc::kTimeout);
  CHECK(Clock::now() - start < std::chrono::seconds(3));
  CHECK(backend_pid(*db) == pid);
}

TEST_CASE("a server that stops answering costs the caller one deadline, then fails fast", "[postgres]") {
  TestDatabase pg;
  DatabaseOptions options;
  options.statement_timeout = std::chrono::milliseconds(500);
  auto db = pg.open(options);
  REQUIRE(db);
  const int pid = backend_pid(*db);
  REQUIRE(::kill(pid, SIGSTOP) == 0);  // the server process of our session: frozen, socket open
  const auto start = Clock::now();
  auto stuck = db->schema_version();
  const auto waited = Clock::now() - start;
  ::kill(pid, SIGCONT);
  REQUIRE_FALSE(stuck);
  CHECK(stuck.error().code == Errc::kUnavailable);
  CHECK(waited >= std::chrono::milliseconds(2000));  // statement_timeout plus the unresponsive margin
  CHECK(waited < std::chrono::milliseconds(4500));
  REQUIRE(recovers(*db, std::chrono::seconds(15)));
  CHECK(backend_pid(*db) != pid);
}

TEST_CASE("an unreachable server is a one-line error; connect_wait bounds the wait", "[postgres]") {
  cellgate::state::test::TempDir tmp;
  const std::string url = "postgresql://nobody@/nodb?host=" + tmp.path();  // no server on that socket
  auto start = Clock::now();
  auto db = Database::connect(url, tmp.path());
  REQUIRE_FALSE(db);
  CHECK(db.error().code == Errc::kUnavailable);
  CHECK(db.error().message.find('\n') == std::string::npos);
  CHECK_THAT(db.error().message, Catch::Contains("nodb"));
  CHECK(Clock::now() - start < std::chrono::seconds(2));

  DatabaseOptions options;
  options.connect_wait = std::chrono::milliseconds(1500);
  start = Clock::now();
  db = Database::connect(url, tmp.path(), options);
  REQUIRE_FALSE(db);
  CHECK(Clock::now() - start >= std::chrono::milliseconds(1000));
  CHECK(Clock::now() - start < std::chrono::seconds(4));
}

TEST_CASE("a second node on one database is refused; tools still connect", "[postgres]") {
  TestDatabase pg;
  DatabaseOptions node;
  node.single_node = true;
  auto first = pg.open(node);
  REQUIRE(first);
  auto second = pg.open(node);
  REQUIRE_FALSE(second);
  CHECK(second.error().code == Errc::kConflict);
  CHECK_THAT(second.error().message, Catch::Contains("another cellgate node serves this database"));
  auto tool = pg.open();
  REQUIRE(tool);
  CHECK(tool->schema_version());
}

TEST_CASE("a password in the URL never reaches a message", "[postgres]") {
  cellgate::state::test::TempDir tmp;
  auto db = Database::connect("postgresql://alice:hunter2@/nodb?host=" + tmp.path(), tmp.path());
  REQUIRE_FALSE(db);
  CHECK(db.error().message.find("hunter2") == std::string::npos);
  CHECK_THAT(db.error().message, Catch::Contains("alice:***@"));
}

TEST_CASE("bad --database values are refused with one line", "[state]") {
  cellgate::state::test::TempDir tmp;
  for (const char* spec : {"mysql://x/y", "cellgate.db", "sqlite://relative.db"}) {
    auto db = Database::connect(spec, tmp.path());
    REQUIRE_FALSE(db);
    CHECK(db.error().code == Errc::kBadRequest);
    CHECK_THAT(db.error().message, Catch::StartsWith("--database: "));
  }
  auto file = Database::connect("sqlite://" + tmp.file("x.db"), tmp.path());
  REQUIRE(file);
  CHECK(file->path() == tmp.file("x.db"));
}

TEST_CASE("? placeholders become $n outside quotes and comments", "[state]") {
  auto n = number_placeholders("SELECT a FROM t WHERE b = ? AND c = '?' AND \"d?\" = ? -- ?\n/* ? */ LIMIT ?");
  CHECK(n.sql == "SELECT a FROM t WHERE b = $1 AND c = '?' AND \"d?\" = $2 -- ?\n/* ? */ LIMIT $3");
  CHECK(n.params == 3);
  CHECK(number_placeholders("VALUES ('it''s ?', ?)").sql == "VALUES ('it''s ?', $1)");
  CHECK(number_placeholders("no params").params == 0);
  CHECK(number_placeholders("'unterminated ?").params == 0);
}

TEST_CASE("passwords are redacted from database URLs", "[state]") {
  CHECK(redact_url("postgresql://u:secret@h:5432/db") == "postgresql://u:***@h:5432/db");
  CHECK(redact_url("postgresql://u@h/db?password=secret&sslmode=require") ==
        "postgresql://u@h/db?password=***&sslmode=require");
  CHECK(redact_url("postgresql:///db?host=/run/pg") == "postgresql:///db?host=/run/pg");
  CHECK(redact_url("postgres://u:p@ss@h/db").find("p@ss") == std::string::npos);
}
