// SPDX-License-Identifier: BSD-3-Clause
// database: the gateway's SQLite state file, its pragmas and migrations, and RAII statement helpers.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

struct sqlite3;
struct sqlite3_stmt;

namespace cellgate::state {

class Statement;

// One connection to <data_dir>/cellgate.db. Not thread-safe: use it from one thread at a time (the
// gateway's io thread, or a CLI). Several Database objects (threads or processes) may share one file:
// WAL mode plus busy_timeout serialise their writers. Errors come back as Result, never as exceptions.
class Database {
 public:
  static constexpr const char* kFileName = "cellgate.db";

  // Creates data_dir (0700) if missing, then opens <data_dir>/cellgate.db (created 0600) and migrates it.
  static common::Result<Database> open(const std::string& data_dir);
  // Same, for an explicit file path (tests, tools).
  static common::Result<Database> open_file(const std::string& path);

  Database(Database&&) noexcept;
  Database& operator=(Database&&) noexcept;
  ~Database();

  const std::string& path() const { return path_; }
  // The version the file is at after open (== latest_schema_version()).
  common::Result<int> schema_version();
  // Runs one or more statements that return no rows we need (DDL, pragmas).
  common::Status exec(std::string_view sql);
  // Compiles one statement; the Statement must not outlive this Database.
  common::Result<Statement> prepare(std::string_view sql);
  // Rows changed by the last INSERT/UPDATE/DELETE on this connection.
  int64_t changes() const;
  sqlite3* handle() const { return db_; }

 private:
  Database(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  common::Status configure();
  common::Status migrate();
  common::Error error(std::string_view what) const;

  sqlite3* db_ = nullptr;
  std::string path_;
};

// A compiled statement. Bind with 1-based indexes, then step() for rows or run() to completion.
// A bind failure is remembered and reported by the next step()/run().
class Statement {
 public:
  Statement(Statement&&) noexcept;
  Statement& operator=(Statement&&) noexcept;
  ~Statement();

  Statement& bind(int index, int64_t value);
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view value);
  Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  Statement& bind(int index, const std::string& value) { return bind(index, std::string_view(value)); }
  Statement& bind(int index, bool value) { return bind(index, static_cast<int64_t>(value ? 1 : 0)); }
  Statement& bind(int index, std::optional<int64_t> value);
  Statement& bind(int index, std::optional<double> value);
  Statement& bind_null(int index);

  // true: a row is ready for the column_* accessors; false: done.
  common::Result<bool> step();
  // Steps to completion (INSERT/UPDATE/DELETE); a constraint violation maps to Errc::kConflict.
  common::Status run();
  // Rewinds for another execution and clears the bindings.
  void reset();

  bool column_is_null(int index) const;
  int64_t column_int(int index) const;
  double column_double(int index) const;
  std::string column_text(int index) const;
  std::optional<int64_t> column_opt_int(int index) const;
  std::optional<double> column_opt_double(int index) const;

 private:
  friend class Database;
  Statement(sqlite3_stmt* stmt, sqlite3* db) : stmt_(stmt), db_(db) {}
  void note_bind(int rc);

  sqlite3_stmt* stmt_ = nullptr;
  sqlite3* db_ = nullptr;
  int bind_rc_ = 0;  // first failing sqlite3_bind_* code, 0 if none
};

// BEGIN IMMEDIATE on construction (takes the write lock up front, so no upgrade deadlock), ROLLBACK in
// the destructor unless commit() succeeded.
class Transaction {
 public:
  static common::Result<Transaction> begin(Database& db);
  Transaction(Transaction&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
  Transaction& operator=(Transaction&&) = delete;
  ~Transaction();
  common::Status commit();

 private:
  explicit Transaction(Database* db) : db_(db) {}
  Database* db_;
};

}  // namespace cellgate::state
