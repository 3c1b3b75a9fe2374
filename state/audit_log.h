// SPDX-License-Identifier: BSD-3-Clause
// audit_log: who started, stopped, restored or deleted what, as database rows and JSON lines.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "common/unique_fd.h"
#include "state/database.h"

namespace cellgate::state {

struct AuditEvent {
  std::string user;         // who (user name, or "cli" for the admin command line)
  std::string action;       // what was done, e.g. "start", "stop", "restore", "delete", "user.add"
  std::string object_kind;  // e.g. "kernel", "session", "workspace", "snapshot", "user"
  std::string object_id;
  nlohmann::json detail = nlohmann::json::object();  // extra facts; secret-looking keys are redacted
  bool ok = true;                                    // result: "ok" or "error"
};

struct AuditRecord {
  int64_t seq = 0;  // database order
  std::string time;  // iso8601 UTC
  AuditEvent event;
};

// The largest serialized detail kept; a bigger one is replaced by {"truncated": true, "bytes": N}.
inline constexpr size_t kMaxAuditDetailBytes = 4096;

// Append-only: the table refuses UPDATE and DELETE (triggers), and the file is opened O_APPEND.
// db must outlive the log and stay in place. Not thread-safe (as Database).
class AuditLog {
 public:
  // Opens (creating, 0600) <data_dir>/audit.log for appending. Errors: kInternal with errno.
  static common::Result<AuditLog> open(Database& db, const std::string& data_dir);

  // Stamps the event with the current time, inserts its row, then appends one JSON line to the file
  // with a single write(2) (no buffering to lose). Detail keys naming secrets (token, password,
  // secret, key, authorization, cookie; case-insensitive, at any depth) have their values replaced.
  common::Status record(const AuditEvent& event);
  // The newest rows first, at most limit (bounded by the caller).
  common::Result<std::vector<AuditRecord>> recent(size_t limit);

  const std::string& file_path() const { return path_; }

 private:
  AuditLog(Database& db, common::UniqueFd fd, std::string path) : db_(&db), fd_(std::move(fd)), path_(std::move(path)) {}
  Database* db_;
  common::UniqueFd fd_;
  std::string path_;
};

// The detail as it is stored: secrets redacted and the size bounded (exposed for tests).
nlohmann::json sanitize_audit_detail(const nlohmann::json& detail);

}  // namespace cellgate::state
