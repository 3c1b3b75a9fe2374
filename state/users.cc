// SPDX-License-Identifier: BSD-3-Clause
// users: named users, their admin flag and limit overrides, and bearer tokens stored only as SHA-256.
#include "state/users.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "common/random.h"
#include "common/time_format.h"
#include "state/rows.h"

namespace cellgate::state {

using common::Errc;
using common::make_error;
using common::Result;
using common::Status;

namespace {

constexpr size_t kTokenBytes = 32;  // 256 bits
constexpr size_t kMaxTokenChars = 4096;  // anything longer is not one of ours; don't hash megabytes
constexpr const char* kUserColumns =
    "name, admin, max_kernels, memory_bytes, cpus, pids, workspace_bytes, workspace_files, exec_timeout_s, created, "
    "max_connections, network, store_bytes, journal_bytes, journal_days";
constexpr int kTokenHashColumn = 15;  // after kUserColumns, in authenticate()

User read_user(const Statement& st) {
  User u;
  u.name = st.column_text(0);
  u.admin = st.column_int(1) != 0;
  u.limits.max_kernels = st.column_opt_int(2);
  u.limits.memory_bytes = st.column_opt_int(3);
  u.limits.cpus = st.column_opt_double(4);
  u.limits.pids = st.column_opt_int(5);
  u.limits.workspace_bytes = st.column_opt_int(6);
  u.limits.workspace_files = st.column_opt_int(7);
  u.limits.exec_timeout_s = st.column_opt_int(8);
  u.created = st.column_text(9);
  u.limits.max_connections = st.column_opt_int(10);
  if (!st.column_is_null(11)) u.limits.network = st.column_text(11);
  u.limits.store_bytes = st.column_opt_int(12);
  u.limits.journal_bytes = st.column_opt_int(13);
  u.limits.journal_days = st.column_opt_int(14);
  return u;
}

// Equal-length hex digests compared without an early exit (CRYPTO_memcmp), so response time does
// not reveal how many leading characters of a guessed hash matched.
bool same_hash(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

Status check_name(const std::string& name) {
  if (!valid_user_name(name))
    return make_error(Errc::kBadRequest, "invalid user name '" + name + "' (expected [A-Za-z0-9._-]{1,64})");
  return common::ok();
}

Status expect_change(Database& db, const std::string& name) {
  if (db.changes() == 0) return make_error(Errc::kNotFound, "no such user '" + name + "'");
  return common::ok();
}

}  // namespace

bool valid_user_name(std::string_view name) {
  if (name.empty() || name.size() > 64 || name == "." || name == "..") return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string hash_token(std::string_view token) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  int rc = EVP_Digest(token.data(), token.size(), md, &len, EVP_sha256(), nullptr);
  CELLGATE_ASSERT(rc == 1);  // SHA-256 on a memory buffer only fails when OpenSSL itself is broken
  return common::to_hex(md, len);
}

Status validate_limits(const UserLimits& l) {
  auto non_negative = [](const std::optional<int64_t>& v, const char* field) -> Status {
    if (v && *v < 0) return make_error(Errc::kBadRequest, std::string(field) + " must not be negative");
    return common::ok();
  };
  for (auto [v, field] : {std::pair{&l.max_kernels, "max kernels"}, std::pair{&l.memory_bytes, "memory"},
                          std::pair{&l.pids, "pids"}, std::pair{&l.workspace_bytes, "workspace bytes"},
                          std::pair{&l.workspace_files, "workspace files"},
                          std::pair{&l.exec_timeout_s, "exec timeout"},
                          std::pair{&l.max_connections, "max connections"},
                          std::pair{&l.store_bytes, "store bytes"}, std::pair{&l.journal_bytes, "journal bytes"},
                          std::pair{&l.journal_days, "journal days"}})
    if (auto s = non_negative(*v, field); !s) return s;
  // Zero would read as "no limit" further down (launcher::Limits uses 0 for unset), so it is refused here.
  for (auto [v, field] : {std::pair{&l.memory_bytes, "memory"}, std::pair{&l.pids, "pids"},
                          std::pair{&l.exec_timeout_s, "exec timeout"}})
    if (*v && **v == 0) return make_error(Errc::kBadRequest, std::string(field) + " must be positive");
  if (l.cpus && !(*l.cpus > 0 && *l.cpus <= 1024)) return make_error(Errc::kBadRequest, "cpus must be in (0, 1024]");
  return common::ok();
}

void UserStore::set_single_token(std::string_view token) {
  single_token_hash_ = token.empty() ? std::string() : hash_token(token);
}

Result<std::string> UserStore::add_user(const std::string& name, bool admin, const UserLimits& limits) {
  if (auto s = check_name(name); !s) return s.error();
  if (auto s = validate_limits(limits); !s) return s.error();
  std::string token = common::random_hex(kTokenBytes);
  auto st = db_.prepare(std::string("INSERT INTO users (") + kUserColumns +
                        ", token_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  if (!st) return st.error();
  st->bind(1, name).bind(2, admin).bind(3, limits.max_kernels).bind(4, limits.memory_bytes).bind(5, limits.cpus);
  st->bind(6, limits.pids).bind(7, limits.workspace_bytes).bind(8, limits.workspace_files);
  st->bind(9, limits.exec_timeout_s).bind(10, common::iso8601_now()).bind(11, limits.max_connections);
  st->bind(12, limits.network).bind(13, limits.store_bytes).bind(14, limits.journal_bytes);
  st->bind(15, limits.journal_days).bind(16, hash_token(token));
  if (auto s = st->run(); !s) {
    if (s.error().code == Errc::kConflict) return make_error(Errc::kConflict, "user '" + name + "' already exists");
    return s.error();
  }
  return token;
}

Status UserStore::remove_user(const std::string& name) {
  auto st = db_.prepare("DELETE FROM users WHERE name = ?");
  if (!st) return st.error();
  if (auto s = st->bind(1, name).run(); !s) return s;
  return expect_change(db_, name);
}

Result<std::string> UserStore::reset_token(const std::string& name) {
  std::string token = common::random_hex(kTokenBytes);
  auto st = db_.prepare("UPDATE users SET token_hash = ? WHERE name = ?");
  if (!st) return st.error();
  if (auto s = st->bind(1, hash_token(token)).bind(2, name).run(); !s) return s.error();
  if (auto s = expect_change(db_, name); !s) return s.error();
  return token;
}

Status UserStore::set_limits(const std::string& name, const UserLimits& limits) {
  if (auto s = validate_limits(limits); !s) return s;
  auto st = db_.prepare(
      "UPDATE users SET max_kernels = ?, memory_bytes = ?, cpus = ?, pids = ?, workspace_bytes = ?, "
      "workspace_files = ?, exec_timeout_s = ?, max_connections = ?, network = ?, store_bytes = ?, "
      "journal_bytes = ?, journal_days = ? WHERE name = ?");
  if (!st) return st.error();
  st->bind(1, limits.max_kernels).bind(2, limits.memory_bytes).bind(3, limits.cpus).bind(4, limits.pids);
  st->bind(5, limits.workspace_bytes).bind(6, limits.workspace_files).bind(7, limits.exec_timeout_s);
  st->bind(8, limits.max_connections).bind(9, limits.network).bind(10, limits.store_bytes);
  st->bind(11, limits.journal_bytes).bind(12, limits.journal_days).bind(13, name);
  if (auto s = st->run(); !s) return s;
  return expect_change(db_, name);
}

Result<User> UserStore::get_user(const std::string& name) {
  auto st = db_.prepare(std::string("SELECT ") + kUserColumns + " FROM users WHERE name = ?");
  if (!st) return st.error();
  st->bind(1, name);
  return first<User>(*st, read_user, "no such user '" + name + "'");
}

Result<std::vector<User>> UserStore::list_users() {
  auto st = db_.prepare(std::string("SELECT ") + kUserColumns + " FROM users ORDER BY name");
  if (!st) return st.error();
  return collect<User>(*st, read_user);
}

Result<int64_t> UserStore::count_users() {
  auto st = db_.prepare("SELECT count(*) FROM users");
  if (!st) return st.error();
  return first<int64_t>(*st, [](const Statement& row) { return row.column_int(0); }, "count returned no row");
}

Result<std::optional<User>> UserStore::authenticate(std::string_view token) {
  if (token.empty() || token.size() > kMaxTokenChars) return std::optional<User>();
  const std::string hash = hash_token(token);
  // The lookup goes through the UNIQUE index on token_hash; the equality the index found is then
  // re-checked in constant time, so the decision itself never rests on an early-exit compare.
  auto st = db_.prepare(std::string("SELECT ") + kUserColumns + ", token_hash FROM users WHERE token_hash = ?");
  if (!st) return st.error();
  auto row = st->bind(1, hash).step();
  if (!row) return row.error();
  if (row.value()) {
    if (!same_hash(st->column_text(kTokenHashColumn), hash)) return std::optional<User>();
    return std::optional<User>(read_user(*st));
  }
  if (single_token_hash_.empty()) return std::optional<User>();
  auto count = count_users();
  if (!count) return count.error();
  if (count.value() != 0 || !same_hash(hash, single_token_hash_)) return std::optional<User>();
  User u;
  u.name = kDefaultUserName;
  u.admin = true;
  u.implicit = true;
  return std::optional<User>(std::move(u));
}

}  // namespace cellgate::state
