// SPDX-License-Identifier: BSD-3-Clause
// sqlite_backend: the embedded default: one file, WAL, busy timeout, foreign keys on.
#include "state/sqlite_backend.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include <fmt/core.h>

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

class SqliteCursor final : public Cursor {
 public:
  SqliteCursor(sqlite3_stmt* stmt, sqlite3* db) : stmt_(stmt), db_(db) {}
  ~SqliteCursor() override { sqlite3_finalize(stmt_); }

  Status bind_int(int index, int64_t value) override { return checked(sqlite3_bind_int64(stmt_, index, value)); }
  Status bind_double(int index, double value) override { return checked(sqlite3_bind_double(stmt_, index, value)); }
  Status bind_text(int index, std::string_view value) override {
    return checked(sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
  }
  Status bind_text_in_place(int index, std::string_view value) override {
    return checked(sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_STATIC, SQLITE_UTF8));
  }
  Status bind_null(int index) override { return checked(sqlite3_bind_null(stmt_, index)); }

  Result<bool> step() override {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) {
      sqlite3_reset(stmt_);  // releases its read snapshot; the bindings stay until reset()
      return false;
    }
    // sqlite3_errmsg names the violated constraint or the I/O failure; sqlite3_errstr(rc) is the fallback.
    std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_reset(stmt_);
    return make_error(errc_for(rc), message);
  }

  void reset() override {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  bool is_null(int column) const override { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
  int64_t get_int(int column) const override { return sqlite3_column_int64(stmt_, column); }
  double get_double(int column) const override { return sqlite3_column_double(stmt_, column); }
  std::string get_text(int column) const override {
    const auto* text = sqlite3_column_text(stmt_, column);
    if (!text) return {};
    return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
  }

 private:
  static Status checked(int rc) {
    if (rc == SQLITE_OK) return common::ok();
    return make_error(Errc::kInternal, sqlite3_errstr(rc));
  }

  sqlite3_stmt* stmt_;
  sqlite3* db_;
};

}  // namespace

Result<std::unique_ptr<SqliteBackend>> SqliteBackend::open(const std::string& path) {
  // Pre-create the file 0600: the token hashes are nobody else's business. SQLite gives the -wal and
  // -shm files the database file's permissions (os_unix.c findCreateFileMode). Only when it is absent:
  // close(2) drops every fcntl(2) lock this process holds on the file, whatever fd took it, and so an
  // open-and-close here took the SHARED lock of another connection of this process (the journal's
  // beside the io thread's). The next process to close its last connection then found the file
  // unlocked, checkpointed and deleted the WAL under the gateway, whose later commits went to the
  // unlinked WAL: seen by no other process and gone at the next start (sqlite.org/howtocorrupt.html 2.2).
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno != EEXIST) {
    int err = errno;
    return make_error(Errc::kInternal, fmt::format("{}: cannot open: {}", path, std::strerror(err)), err);
  }
  if (fd >= 0) ::close(fd);  // new: no connection has it open, so it holds no lock to lose
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, nullptr);
  // Owns raw even when the open failed (sqlite3_open_v2 still allocates it).
  std::unique_ptr<SqliteBackend> backend(new SqliteBackend(raw, path));
  if (rc != SQLITE_OK) return backend->error("cannot open the state database");
  if (auto s = backend->configure(); !s) return s.error();
  return backend;
}

SqliteBackend::~SqliteBackend() {
  sqlite3_finalize(begin_);
  sqlite3_finalize(commit_);
  if (db_) sqlite3_close_v2(db_);
}

Status SqliteBackend::run_cached(sqlite3_stmt*& stmt, const char* sql) {
  if (!stmt && sqlite3_prepare_v2(db_, sql, -1, &stmt, nullptr) != SQLITE_OK) {
    sqlite3_finalize(stmt);
    stmt = nullptr;
    return error(sql);
  }
  const int rc = sqlite3_step(stmt);
  if (rc == SQLITE_DONE) {
    sqlite3_reset(stmt);
    return common::ok();
  }
  auto failed = make_error(errc_for(rc), fmt::format("{}: {}", path_, sqlite3_errmsg(db_)));
  sqlite3_reset(stmt);
  return failed;
}

Error SqliteBackend::error(std::string_view what) const {
  int rc = db_ ? sqlite3_errcode(db_) : SQLITE_NOMEM;
  const char* msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
  return make_error(errc_for(rc), fmt::format("{}: {}: {}", path_, what, msg));
}

namespace {
// cellgate_now_ms(): the database's clock in milliseconds since the epoch, the one clock leases are
// measured with (docs/cluster.md). PostgreSQL's is a function the schema creates.
void now_ms(sqlite3_context* ctx, int, sqlite3_value**) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  sqlite3_result_int64(ctx, std::chrono::duration_cast<std::chrono::milliseconds>(now).count());
}
}  // namespace

Status SqliteBackend::configure() {
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);
  if (sqlite3_create_function_v2(db_, "cellgate_now_ms", 0, SQLITE_UTF8, nullptr, now_ms, nullptr, nullptr,
                                 nullptr) != SQLITE_OK)
    return error("cannot register cellgate_now_ms()");
  // journal_mode is the first statement that reads the file, so a corrupt or foreign file fails here
  // with "file is not a database".
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
    auto cursor = prepare("PRAGMA journal_mode=WAL");
    auto row = cursor ? cursor.value()->step() : Result<bool>(cursor.error());
    const int rc = sqlite3_errcode(db_);
    if (!row && (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    if (!row) return unusable(row.error());
    if (!row.value() || cursor.value()->get_text(0) != "wal")
      return make_error(Errc::kInternal, path_ + ": cannot switch the state database to WAL mode");
    break;
  }
  // NORMAL is durable across application crashes in WAL mode; only power loss can drop the last
  // transactions (sqlite.org/pragma.html#pragma_synchronous).
  return exec("PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL;");
}

Status SqliteBackend::exec(std::string_view sql) {
  std::string text(sql);
  char* msg = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &msg);
  if (rc == SQLITE_OK) return common::ok();
  std::string message = msg ? msg : sqlite3_errstr(rc);
  sqlite3_free(msg);
  return make_error(errc_for(rc), fmt::format("{}: {}", path_, message));
}

Result<std::unique_ptr<Cursor>> SqliteBackend::prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) return error("cannot prepare statement");
  return std::unique_ptr<Cursor>(std::make_unique<SqliteCursor>(stmt, db_));
}

int64_t SqliteBackend::changes() const { return sqlite3_changes64(db_); }

}  // namespace cellgate::state
