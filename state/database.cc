// SPDX-License-Identifier: BSD-3-Clause
// database: the gateway's SQLite state file, its pragmas and migrations, and RAII statement helpers.
#include "state/database.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>
#include <utility>

#include <fmt/core.h>

#include "common/time_format.h"
#include "state/schema.h"

namespace cellgate::state {

using common::Errc;
using common::Error;
using common::make_error;
using common::Result;
using common::Status;

namespace {

// How long a writer waits for another connection's write lock before giving up with SQLITE_BUSY.
constexpr int kBusyTimeoutMs = 5000;

Errc errc_for(int rc) {
  switch (rc & 0xff) {
    case SQLITE_CONSTRAINT: return Errc::kConflict;
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return Errc::kUnavailable;
    default: return Errc::kInternal;
  }
}

}  // namespace

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
  // Pre-create the file 0600: the token hashes are nobody else's business. SQLite gives the -wal and
  // -shm files the database file's permissions (os_unix.c findCreateFileMode).
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    int err = errno;
    return make_error(Errc::kInternal, fmt::format("{}: cannot open: {}", path, std::strerror(err)), err);
  }
  ::close(fd);
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, nullptr);
  Database db(raw, path);  // owns raw even when the open failed (sqlite3_open_v2 still allocates it)
  if (rc != SQLITE_OK) return db.error("cannot open the state database");
  if (auto s = db.configure(); !s) return s.error();
  if (auto s = db.migrate(); !s) return s.error();
  return db;
}

Database::Database(Database&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)) {}

Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    if (db_) sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

Database::~Database() {
  if (db_) sqlite3_close_v2(db_);
}

Error Database::error(std::string_view what) const {
  int rc = db_ ? sqlite3_errcode(db_) : SQLITE_NOMEM;
  const char* msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
  return make_error(errc_for(rc), fmt::format("{}: {}: {}", path_, what, msg));
}

Status Database::configure() {
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);
  // journal_mode is the first statement that reads the file, so a corrupt or foreign file fails here
  // with "file is not a database".
  {
    auto unusable = [&](const Error& e) {
      return make_error(e.code, fmt::format("{}: cannot read the state database ({}); restore it from a backup or "
                                            "move it away",
                                            path_, sqlite3_errmsg(db_)));
    };
    // Switching a fresh file to WAL needs its exclusive lock, and SQLite answers SQLITE_BUSY at once,
    // without the busy handler, when another connection is opening the same file (its deadlock
    // avoidance): a gateway starting while `cellgate user add` runs. Retried within the busy timeout.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
    for (;;) {
      auto stmt = prepare("PRAGMA journal_mode=WAL");
      auto row = stmt ? stmt->step() : Result<bool>(stmt.error());
      const int rc = sqlite3_errcode(db_);
      if (!row && (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
      if (!row) return unusable(row.error());
      if (!row.value() || stmt->column_text(0) != "wal")
        return make_error(Errc::kInternal, path_ + ": cannot switch the state database to WAL mode");
      break;
    }
  }
  // NORMAL is durable across application crashes in WAL mode; only power loss can drop the last
  // transactions (sqlite.org/pragma.html#pragma_synchronous).
  return exec("PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL;");
}

Status Database::migrate() {
  auto tx = Transaction::begin(*this);
  if (!tx) return tx.error();
  if (auto s = exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied TEXT NOT NULL)");
      !s)
    return s;
  auto current = schema_version();
  if (!current) return current.error();
  const int latest = latest_schema_version();
  if (current.value() > latest)
    return make_error(Errc::kInternal, fmt::format("{}: schema version {} is newer than this cellgate supports ({})",
                                                   path_, current.value(), latest));
  for (const auto& m : migrations()) {
    if (m.version <= current.value()) continue;
    if (auto s = exec(m.sql); !s)
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
  return static_cast<int>(stmt->column_int(0));
}

Status Database::exec(std::string_view sql) {
  std::string text(sql);
  char* msg = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &msg);
  if (rc == SQLITE_OK) return common::ok();
  std::string message = msg ? msg : sqlite3_errstr(rc);
  sqlite3_free(msg);
  return make_error(errc_for(rc), fmt::format("{}: {}", path_, message));
}

Result<Statement> Database::prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) return error("cannot prepare statement");
  return Statement(stmt, db_);
}

int64_t Database::changes() const { return sqlite3_changes64(db_); }

// --- Statement ---

Statement::Statement(Statement&& other) noexcept
    : stmt_(std::exchange(other.stmt_, nullptr)), db_(other.db_), bind_rc_(other.bind_rc_) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    if (stmt_) sqlite3_finalize(stmt_);
    stmt_ = std::exchange(other.stmt_, nullptr);
    db_ = other.db_;
    bind_rc_ = other.bind_rc_;
  }
  return *this;
}

Statement::~Statement() {
  if (stmt_) sqlite3_finalize(stmt_);
}

void Statement::note_bind(int rc) {
  if (rc != SQLITE_OK && bind_rc_ == 0) bind_rc_ = rc;
}

Statement& Statement::bind(int index, int64_t value) {
  note_bind(sqlite3_bind_int64(stmt_, index, value));
  return *this;
}

Statement& Statement::bind(int index, double value) {
  note_bind(sqlite3_bind_double(stmt_, index, value));
  return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
  note_bind(sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
  return *this;
}

Statement& Statement::bind(int index, std::optional<int64_t> value) {
  return value ? bind(index, *value) : bind_null(index);
}

Statement& Statement::bind(int index, std::optional<double> value) {
  return value ? bind(index, *value) : bind_null(index);
}

Statement& Statement::bind_null(int index) {
  note_bind(sqlite3_bind_null(stmt_, index));
  return *this;
}

Result<bool> Statement::step() {
  if (bind_rc_ != 0)
    return make_error(Errc::kInternal, fmt::format("cannot bind a parameter: {}", sqlite3_errstr(bind_rc_)));
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  // sqlite3_errmsg names the violated constraint or the I/O failure; sqlite3_errstr(rc) is the fallback.
  std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  sqlite3_reset(stmt_);
  return make_error(errc_for(rc), message);
}

Status Statement::run() {
  for (;;) {
    auto row = step();
    if (!row) return row.error();
    if (!row.value()) break;
  }
  sqlite3_reset(stmt_);
  return common::ok();
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  bind_rc_ = 0;
}

bool Statement::column_is_null(int index) const { return sqlite3_column_type(stmt_, index) == SQLITE_NULL; }
int64_t Statement::column_int(int index) const { return sqlite3_column_int64(stmt_, index); }
double Statement::column_double(int index) const { return sqlite3_column_double(stmt_, index); }

std::string Statement::column_text(int index) const {
  const auto* text = sqlite3_column_text(stmt_, index);
  if (!text) return {};
  return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(sqlite3_column_bytes(stmt_, index)));
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
  if (auto s = db.exec("BEGIN IMMEDIATE"); !s) return s.error();
  return Transaction(&db);
}

Transaction::~Transaction() {
  if (db_) (void)db_->exec("ROLLBACK");
}

Status Transaction::commit() {
  CELLGATE_ASSERT(db_ != nullptr);
  auto s = db_->exec("COMMIT");
  if (s) db_ = nullptr;
  return s;
}

}  // namespace cellgate::state
