// SPDX-License-Identifier: BSD-3-Clause
// sqlite_backend: the embedded default: one file, WAL, busy timeout, foreign keys on.
#pragma once

#include <memory>
#include <string>

#include "common/result.h"
#include "state/backend.h"

struct sqlite3;
struct sqlite3_stmt;

namespace cellgate::state {

// Several SqliteBackends (threads or processes) may share one file: WAL mode plus busy_timeout
// serialise their writers.
class SqliteBackend final : public Backend {
 public:
  // Opens (creating 0600) the file and sets its pragmas. A corrupt or foreign file is an error naming it.
  static common::Result<std::unique_ptr<SqliteBackend>> open(const std::string& path);
  ~SqliteBackend() override;

  BackendKind kind() const override { return BackendKind::kSqlite; }
  const std::string& name() const override { return path_; }
  common::Status exec(std::string_view sql) override;
  common::Result<std::unique_ptr<Cursor>> prepare(std::string_view sql) override;
  int64_t changes() const override;
  // Compiled once per connection: a writer that commits every batch should not parse these each time.
  common::Status begin() override { return run_cached(begin_, "BEGIN IMMEDIATE"); }
  common::Status commit() override { return run_cached(commit_, "COMMIT"); }
  void rollback() override { (void)exec("ROLLBACK"); }
  common::Status lock(std::string_view) override { return common::ok(); }

 private:
  SqliteBackend(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  common::Status configure();
  common::Error error(std::string_view what) const;
  common::Status run_cached(sqlite3_stmt*& stmt, const char* sql);

  sqlite3* db_ = nullptr;
  sqlite3_stmt* begin_ = nullptr;  // finalized before db_ closes
  sqlite3_stmt* commit_ = nullptr;
  std::string path_;
};

}  // namespace cellgate::state
