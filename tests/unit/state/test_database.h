// SPDX-License-Identifier: BSD-3-Clause
// test_database: the backend a [backends] test case runs on: SQLite in a scratch dir, or a fresh
// database on the test PostgreSQL server (CELLGATE_TEST_PG_URL_FILE set; tests/postgres/pg_server.py).
#pragma once

#include <libpq-fe.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include "state/database.h"
#include "state_test_util.h"

namespace cellgate::state::test {

// One variable, since ctest's discovered tests take one ENVIRONMENT entry cleanly: set, it names the
// file with the fixture server's URL and selects PostgreSQL.
inline bool testing_postgres() { return std::getenv("CELLGATE_TEST_PG_URL_FILE") != nullptr; }

// The fixture server's URL of its maintenance database, read from the file the fixture wrote.
inline std::string postgres_admin_url() {
  const char* file = std::getenv("CELLGATE_TEST_PG_URL_FILE");
  if (!file) throw std::runtime_error("CELLGATE_TEST_PG_URL_FILE is not set (run under ctest's postgres fixture)");
  std::ifstream in(file);
  std::string url;
  if (!std::getline(in, url) || url.empty()) throw std::runtime_error(std::string("no URL in ") + file);
  return url;
}

// url with its database (the path of postgresql://user@/DB?…) replaced.
inline std::string with_database(const std::string& url, const std::string& db) {
  const size_t slash = url.find('/', url.find("://") + 3);
  const size_t query = url.find('?', slash);
  return url.substr(0, slash + 1) + db + (query == std::string::npos ? "" : url.substr(query));
}

// Runs one statement on the server's maintenance database (no cellgate code involved).
inline void admin_exec(const std::string& sql) {
  PGconn* c = PQconnectdb(postgres_admin_url().c_str());
  std::string error;
  if (PQstatus(c) != CONNECTION_OK) {
    error = PQerrorMessage(c);
  } else {
    PGresult* r = PQexec(c, sql.c_str());
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) error = PQerrorMessage(c);
    PQclear(r);
  }
  PQfinish(c);
  if (!error.empty()) throw std::runtime_error(sql + ": " + error);
}

// One test case's database. open() may be called several times: each is a new connection to it.
class TestDatabase {
 public:
  TestDatabase() {
    if (!testing_postgres()) return;
    static std::atomic<int> counter{0};
    name_ = "cgtest_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
    // A locale-aware collation (ICU), as a real server's would be: nothing may depend on it.
    admin_exec("CREATE DATABASE " + name_ +
               " TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C.UTF-8' LOCALE_PROVIDER icu ICU_LOCALE 'en-US'");
    spec_ = with_database(postgres_admin_url(), name_);
  }
  ~TestDatabase() {
    if (name_.empty()) return;
    try {
      admin_exec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
    } catch (const std::exception&) {
      // a dropped server: the fixture's stop removes everything anyway
    }
  }
  TestDatabase(const TestDatabase&) = delete;
  TestDatabase& operator=(const TestDatabase&) = delete;

  common::Result<Database> open(const DatabaseOptions& options = {}) const {
    return Database::connect(spec_, dir_.path(), options);
  }
  // The data dir (SQLite's file is in it; the audit log file is in it for both).
  const std::string& dir() const { return dir_.path(); }
  // What --database would be: "" for SQLite in dir().
  const std::string& spec() const { return spec_; }
  const std::string& name() const { return name_; }

 private:
  TempDir dir_;
  std::string name_;
  std::string spec_;
};

}  // namespace cellgate::state::test
