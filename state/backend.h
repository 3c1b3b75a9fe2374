// SPDX-License-Identifier: BSD-3-Clause
// backend: the small interface a database engine implements under Database (SQLite, PostgreSQL).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"

namespace cellgate::state {

enum class BackendKind { kSqlite, kPostgres };

struct DatabaseOptions {
  // PostgreSQL: how long one statement may take (the server cancels it then; the connection is dropped
  // 2 s later if the server does not answer at all, so the calling thread, the gateway's io thread, is
  // never held longer), and how long connect() keeps retrying a server that refuses connections (a
  // database that starts after the gateway).
  std::chrono::milliseconds statement_timeout{10000};
  std::chrono::milliseconds connect_wait{0};
  // PostgreSQL: hold a session advisory lock so that a second node on the same database is refused
  // (one node per database until membership lands; docs/cluster.md). The gateway sets it; tools do not.
  bool single_node = false;
};

// One prepared statement of one backend. Parameters are 1-based; every text, number and NULL is bound
// before the first step(). Results are read by 0-based column index after step() returned true.
// Errors come back from bind_* (a bad index) and step(); nothing throws.
class Cursor {
 public:
  virtual ~Cursor() = default;
  virtual common::Status bind_int(int index, int64_t value) = 0;
  virtual common::Status bind_double(int index, double value) = 0;
  virtual common::Status bind_text(int index, std::string_view value) = 0;
  // The same, the text read where it is (no copy) until reset() or the next bind at index: the caller
  // keeps it alive and unchanged until then. Engines that copy anyway need not override it.
  virtual common::Status bind_text_in_place(int index, std::string_view value) { return bind_text(index, value); }
  virtual common::Status bind_null(int index) = 0;
  // true: a row is ready; false: done (and changes() counts what it changed).
  virtual common::Result<bool> step() = 0;
  // Forgets the bindings and any result: the statement can run again.
  virtual void reset() = 0;
  virtual bool is_null(int column) const = 0;
  virtual int64_t get_int(int column) const = 0;
  virtual double get_double(int column) const = 0;
  virtual std::string get_text(int column) const = 0;
};

// One connection. Used by one thread at a time (Database documents who calls it).
// Error codes: kConflict for a constraint violation, kUnavailable when the engine cannot answer now
// (busy, connection lost, server restarting: worth retrying later), kBadRequest for text the engine
// refuses (invalid UTF-8), kInternal for the rest. Messages never contain a password.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual BackendKind kind() const = 0;
  // What to name in messages: the file, or the URL without its password.
  virtual const std::string& name() const = 0;
  // One or more statements that return nothing we read (DDL, pragmas), outside parameter binding.
  virtual common::Status exec(std::string_view sql) = 0;
  // sql uses `?` placeholders whatever the engine.
  virtual common::Result<std::unique_ptr<Cursor>> prepare(std::string_view sql) = 0;
  // Rows changed by the last statement that finished.
  virtual int64_t changes() const = 0;
  // SQLite: BEGIN IMMEDIATE, the file's write lock at once. PostgreSQL: BEGIN (READ COMMITTED).
  virtual common::Status begin() = 0;
  virtual common::Status commit() = 0;
  virtual void rollback() = 0;
  // Inside a transaction: waits for, then holds until its end, an exclusive lock named key across
  // every connection to this database (PostgreSQL: pg_advisory_xact_lock). SQLite: nothing to do,
  // BEGIN IMMEDIATE already holds the whole file's write lock.
  virtual common::Status lock(std::string_view key) = 0;
};

}  // namespace cellgate::state
