// SPDX-License-Identifier: BSD-3-Clause
// database: the gateway's state database (SQLite file or PostgreSQL), its migrations, and statements.
#include "state/database.h"

#include <sys/stat.h>

#include <filesystem>
#include <set>
#include <utility>

#include <fmt/core.h>

#include "common/time_format.h"
#include "common/utf8.h"
#include "state/postgres_backend.h"
#include "state/schema.h"
#include "state/sqlite_backend.h"

namespace cellgate::state {

using common::Errc;
using common::Error;
using common::make_error;
using common::Result;
using common::Status;

bool Database::is_postgres_spec(std::string_view spec) {
  return spec.starts_with("postgresql://") || spec.starts_with("postgres://");
}

Result<Database> Database::connect(const std::string& spec, const std::string& data_dir,
                                   const DatabaseOptions& options) {
  if (spec.empty()) return open(data_dir);
  if (spec.starts_with("sqlite://")) {
    const std::string path = spec.substr(9);
    if (!path.starts_with("/"))
      return make_error(Errc::kBadRequest, "--database: a sqlite:// URL needs an absolute path (sqlite:///dir/file.db)");
    return open_file(path);
  }
  if (!is_postgres_spec(spec))
    return make_error(Errc::kBadRequest,
                      "--database: expected postgresql://… or sqlite:///path, got '" + redact_url(spec) + "'");
  auto backend = PostgresBackend::connect(spec, options);
  if (!backend) return backend.error();
  Database db(std::move(backend.value()));
  if (auto s = db.migrate(); !s) return s.error();
  return db;
}

Result<Database> Database::open(const std::string& data_dir) {
  std::error_code ec;
  if (!std::filesystem::exists(data_dir, ec)) {
    std::filesystem::create_directories(data_dir, ec);
    if (ec) return make_error(Errc::kInternal, fmt::format("{}: cannot create: {}", data_dir, ec.message()));
    ::chmod(data_dir.c_str(), 0700);
  }
  return open_file((std::filesystem::path(data_dir) / kFileName).string());
}

Result<Database> Database::open_file(const std::string& path) {
  auto backend = SqliteBackend::open(path);
  if (!backend) return backend.error();
  Database db(std::move(backend.value()));
  if (auto s = db.migrate(); !s) return s.error();
  return db;
}

Database::Database(Database&& other) noexcept = default;
Database& Database::operator=(Database&& other) noexcept = default;
Database::~Database() = default;

Status Database::migrate() {
  auto tx = Transaction::begin(*this);
  if (!tx) return tx.error();
  // Nodes that start together migrate one after the other; the second finds nothing to do.
  if (auto s = tx->lock("cellgate.schema"); !s) return s;
  if (auto s = exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied TEXT NOT NULL)");
      !s)
    return s;
  auto current = schema_version();
  if (!current) return current.error();
  const int latest = latest_schema_version();
  if (current.value() > latest)
    return make_error(Errc::kInternal, fmt::format("{}: schema version {} is newer than this cellgate supports ({})",
                                                   path(), current.value(), latest));
  // Every migration not yet recorded, not only those above the highest: branches land their
  // migrations in any order (10 before 9), and each one touches its own tables.
  std::set<int64_t> applied;
  {
    auto done = prepare("SELECT version FROM schema_version");
    if (!done) return done.error();
    for (;;) {
      auto more = done->step();
      if (!more) return more.error();
      if (!more.value()) break;
      applied.insert(done->column_int(0));
    }
  }
  for (const auto& m : migrations()) {
    if (applied.count(m.version) != 0) continue;
    if (auto s = exec(m.sql(kind())); !s)
      return make_error(s.error().code, fmt::format("migration {}: {}", m.version, s.error().message));
    auto ins = prepare("INSERT INTO schema_version (version, applied) VALUES (?, ?)");
    if (!ins) return ins.error();
    if (auto s = ins->bind(1, static_cast<int64_t>(m.version)).bind(2, common::iso8601_now()).run(); !s) return s;
  }
  return tx->commit();
}

Result<int> Database::schema_version() {
  auto stmt = prepare("SELECT coalesce(max(version), 0) FROM schema_version");
  if (!stmt) return stmt.error();
  auto row = stmt->step();
  if (!row) return row.error();
  if (!row.value()) return make_error(Errc::kInternal, path() + ": schema_version returned no row");
  return static_cast<int>(stmt->column_int(0));
}

Status Database::exec(std::string_view sql) { return backend_->exec(sql); }

Result<Statement> Database::prepare(std::string_view sql) {
  auto cursor = backend_->prepare(sql);
  if (!cursor) return cursor.error();
  return Statement(std::move(cursor.value()));
}

// --- Statement ---

void Statement::note(Status s) {
  if (!s && !bind_error_) bind_error_ = s.error();
}

Statement& Statement::bind(int index, int64_t value) {
  note(cursor_->bind_int(index, value));
  return *this;
}

Statement& Statement::bind(int index, double value) {
  note(cursor_->bind_double(index, value));
  return *this;
}

bool Statement::text_ok(std::string_view value) {
  // SQLite would keep a NUL or invalid UTF-8 and PostgreSQL refuses both: refused by both, as bad input,
  // so that a request behaves the same on either backend.
  if (value.find('\0') != std::string_view::npos) {
    note(make_error(Errc::kBadRequest, "text contains a NUL byte"));
    return false;
  }
  if (!common::valid_utf8(value)) {
    note(make_error(Errc::kBadRequest, "text is not valid UTF-8"));
    return false;
  }
  return true;
}

Statement& Statement::bind(int index, std::string_view value) {
  if (text_ok(value)) note(cursor_->bind_text(index, value));
  return *this;
}

Statement& Statement::bind_in_place(int index, std::string_view value) {
  if (text_ok(value)) note(cursor_->bind_text_in_place(index, value));
  return *this;
}

Statement& Statement::bind(int index, std::optional<int64_t> value) {
  return value ? bind(index, *value) : bind_null(index);
}

Statement& Statement::bind(int index, std::optional<double> value) {
  return value ? bind(index, *value) : bind_null(index);
}

Statement& Statement::bind(int index, const std::optional<std::string>& value) {
  return value ? bind(index, std::string_view(*value)) : bind_null(index);
}

Statement& Statement::bind_null(int index) {
  note(cursor_->bind_null(index));
  return *this;
}

Result<bool> Statement::step() {
  if (bind_error_) {
    Error e = *bind_error_;
    if (e.code != Errc::kBadRequest) e.message = "cannot bind a parameter: " + e.message;
    return e;
  }
  return cursor_->step();
}

Status Statement::run() {
  for (;;) {
    auto row = step();
    if (!row) return row.error();
    if (!row.value()) return common::ok();
  }
}

void Statement::reset() {
  cursor_->reset();
  bind_error_.reset();
}

std::optional<int64_t> Statement::column_opt_int(int index) const {
  if (column_is_null(index)) return std::nullopt;
  return column_int(index);
}

std::optional<double> Statement::column_opt_double(int index) const {
  if (column_is_null(index)) return std::nullopt;
  return column_double(index);
}

// --- Transaction ---

Result<Transaction> Transaction::begin(Database& db) {
  if (auto s = db.backend().begin(); !s) return s.error();
  return Transaction(&db);
}

Transaction::~Transaction() {
  if (db_) db_->backend().rollback();
}

Status Transaction::lock(std::string_view key) {
  CELLGATE_ASSERT(db_ != nullptr);
  return db_->backend().lock(key);
}

Status Transaction::commit() {
  CELLGATE_ASSERT(db_ != nullptr);
  auto s = db_->backend().commit();
  // A failed COMMIT has ended the transaction too (PostgreSQL rolls back; SQLite's is rolled back by
  // the destructor's ROLLBACK, which is harmless when there is nothing left to roll back).
  if (s) db_ = nullptr;
  return s;
}

}  // namespace cellgate::state
