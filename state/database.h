// SPDX-License-Identifier: BSD-3-Clause
// database: the gateway's state database (SQLite file or PostgreSQL), its migrations, and statements.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "state/backend.h"

namespace cellgate::state {

class Statement;

// One connection to the state database. Not thread-safe: one thread at a time (the gateway's io
// thread, or a CLI). Several Database objects (threads, processes, nodes) may share one database.
// Errors come back as Result, never as exceptions.
class Database {
 public:
  static constexpr const char* kFileName = "cellgate.db";

  // spec: "" → SQLite <data_dir>/cellgate.db (data_dir is created 0700); "sqlite:///abs/path";
  // "postgresql://…" or "postgres://…" (libpq's URI). Anything else is kBadRequest, one line.
  static common::Result<Database> connect(const std::string& spec, const std::string& data_dir,
                                          const DatabaseOptions& options = {});
  // SQLite in <data_dir>/cellgate.db, and an explicit SQLite file (tests, tools).
  static common::Result<Database> open(const std::string& data_dir);
  static common::Result<Database> open_file(const std::string& path);
  // Whether spec names PostgreSQL (the CLI checks a SQLite file exists before opening it).
  static bool is_postgres_spec(std::string_view spec);

  Database(Database&&) noexcept;
  Database& operator=(Database&&) noexcept;
  ~Database();

  BackendKind kind() const { return backend_->kind(); }
  // The SQLite file, or the PostgreSQL URL without its password.
  const std::string& path() const { return backend_->name(); }
  // The version the database is at after open (== latest_schema_version()).
  common::Result<int> schema_version();
  // Runs one or more statements that return no rows we need (DDL, pragmas).
  common::Status exec(std::string_view sql);
  // Compiles one statement with `?` placeholders; the Statement must not outlive this Database.
  common::Result<Statement> prepare(std::string_view sql);
  // Rows changed by the last INSERT/UPDATE/DELETE on this connection.
  int64_t changes() const { return backend_->changes(); }
  Backend& backend() { return *backend_; }

 private:
  explicit Database(std::unique_ptr<Backend> backend) : backend_(std::move(backend)) {}
  common::Status migrate();

  std::unique_ptr<Backend> backend_;
};

// A compiled statement. Bind with 1-based indexes, then step() for rows or run() to completion.
// A bind failure (a bad index; text with a NUL byte or invalid UTF-8, which the engines do not store
// alike: kBadRequest) is remembered and reported by the next step()/run().
class Statement {
 public:
  Statement(Statement&&) noexcept = default;
  Statement& operator=(Statement&&) noexcept = default;
  ~Statement() = default;

  Statement& bind(int index, int64_t value);
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view value);
  Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  Statement& bind(int index, const std::string& value) { return bind(index, std::string_view(value)); }
  Statement& bind(int index, bool value) { return bind(index, static_cast<int64_t>(value ? 1 : 0)); }
  Statement& bind(int index, std::optional<int64_t> value);
  Statement& bind(int index, std::optional<double> value);
  Statement& bind(int index, const std::optional<std::string>& value);
  Statement& bind_null(int index);
  // Text read in place, not copied (SQLite): value must stay alive and unchanged until reset() or until
  // index is bound again. For rows written in bulk, whose strings outlive the statement's run.
  Statement& bind_in_place(int index, std::string_view value);

  // true: a row is ready for the column_* accessors; false: done.
  common::Result<bool> step();
  // Steps to completion (INSERT/UPDATE/DELETE); a constraint violation maps to Errc::kConflict.
  common::Status run();
  // Rewinds for another execution and clears the bindings.
  void reset();

  bool column_is_null(int index) const { return cursor_->is_null(index); }
  int64_t column_int(int index) const { return cursor_->get_int(index); }
  double column_double(int index) const { return cursor_->get_double(index); }
  std::string column_text(int index) const { return cursor_->get_text(index); }
  std::optional<int64_t> column_opt_int(int index) const;
  std::optional<double> column_opt_double(int index) const;

 private:
  friend class Database;
  explicit Statement(std::unique_ptr<Cursor> cursor) : cursor_(std::move(cursor)) {}
  void note(common::Status s);
  bool text_ok(std::string_view value);  // notes why not

  std::unique_ptr<Cursor> cursor_;
  std::optional<common::Error> bind_error_;
};

// Begins on construction (SQLite: BEGIN IMMEDIATE, so no upgrade deadlock; PostgreSQL: BEGIN, READ
// COMMITTED), rolls back in the destructor unless commit() succeeded.
class Transaction {
 public:
  static common::Result<Transaction> begin(Database& db);
  Transaction(Transaction&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
  Transaction& operator=(Transaction&&) = delete;
  ~Transaction();
  // Serialises this transaction with every other one that locks the same key, on any connection or
  // node, until commit or rollback (Backend::lock).
  common::Status lock(std::string_view key);
  common::Status commit();

 private:
  explicit Transaction(Database* db) : db_(db) {}
  Database* db_;
};

}  // namespace cellgate::state
