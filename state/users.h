// SPDX-License-Identifier: BSD-3-Clause
// users: named users, their admin flag and limit overrides, and bearer tokens stored only as SHA-256.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "state/database.h"

namespace cellgate::state {

// Per-user overrides of the gateway's configured defaults; nullopt = use the config default.
struct UserLimits {
  std::optional<int64_t> max_kernels;
  std::optional<int64_t> memory_bytes;    // per kernel
  std::optional<double> cpus;             // per kernel, in cores
  std::optional<int64_t> pids;            // per kernel
  std::optional<int64_t> workspace_bytes;
  std::optional<int64_t> workspace_files;
  std::optional<int64_t> exec_timeout_s;  // per execute_request
  std::optional<int64_t> max_connections; // open WebSockets at once
  // The most network its kernels may have: a policy's canonical JSON (egress/policy.h), which the
  // caller validates; nullopt = what the kernelspec gives.
  std::optional<std::string> network;
  std::optional<int64_t> store_bytes;     // what all the user's snapshots may hold in the store
  std::optional<int64_t> journal_bytes;   // what the user's execution journals may hold, all kernels together
  std::optional<int64_t> journal_days;    // how long journal entries are kept
  bool operator==(const UserLimits&) const = default;
};

struct User {
  std::string name;
  bool admin = false;
  UserLimits limits;
  std::string created;    // iso8601
  bool implicit = false;  // the single-token "default" user, which has no row
};

// The implicit user's name in single-token mode.
inline constexpr const char* kDefaultUserName = "default";

// [A-Za-z0-9._-]{1,64}, and not "." or "..", so a name is always safe as a path component.
bool valid_user_name(std::string_view name);
// Lowercase hex SHA-256 of token: what the database stores in place of the token.
std::string hash_token(std::string_view token);

// Users in one Database, which must outlive the store and stay in place. Not thread-safe (as Database).
// Errors: kBadRequest for an invalid name or limit, kConflict for an existing name, kNotFound for an
// unknown one; kUnavailable or kInternal from the database.
class UserStore {
 public:
  explicit UserStore(Database& db) : db_(db) {}
  // The same store, its single token included, over another connection (the database thread's).
  UserStore with_connection(Database& db) const {
    UserStore other(db);
    other.single_token_hash_ = single_token_hash_;
    return other;
  }

  // Single-token mode: while the database has no users, `token` authenticates as an implicit admin
  // user "default". Only its hash is kept, in memory. An empty token turns the mode off.
  void set_single_token(std::string_view token);

  // Creates the user; returns its new 256-bit token (64 hex chars), which is not stored anywhere.
  common::Result<std::string> add_user(const std::string& name, bool admin, const UserLimits& limits);
  common::Status remove_user(const std::string& name);
  // Replaces the user's token; the old one stops working at once. Returns the new token.
  common::Result<std::string> reset_token(const std::string& name);
  common::Status set_limits(const std::string& name, const UserLimits& limits);
  common::Result<User> get_user(const std::string& name);
  // All users ordered by name (never the implicit one).
  common::Result<std::vector<User>> list_users();
  common::Result<int64_t> count_users();

  // The user the bearer token belongs to, or nullopt when it belongs to nobody (also ""). An error
  // means the database could not say (kUnavailable while PostgreSQL is unreachable): the caller
  // refuses the request without counting it as a failed authentication.
  common::Result<std::optional<User>> authenticate(std::string_view token);

 private:
  Database& db_;
  std::string single_token_hash_;
};

// Rejects negative counts and sizes, and zero memory, pids, exec timeout or cpus (zero means "unlimited"
// to the launcher), with a message naming the field.
common::Status validate_limits(const UserLimits& limits);

}  // namespace cellgate::state
