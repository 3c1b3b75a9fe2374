// SPDX-License-Identifier: BSD-3-Clause
// audit_log: one JSON line per connection a kernel opened or was refused, in a size-bounded file.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace cellgate::egress {

// What one connection did. `kind` is how it came: "connect" (a CONNECT tunnel), "intercept" (a
// CONNECT whose TLS the proxy terminated to add headers) or "http" (plain forwarding; one record per
// upstream connection, which may carry several requests).
struct AuditRecord {
  std::string time;        // RFC 3339, when the connection started
  std::string kernel, user;
  std::string kind;
  std::string host;        // as requested (canonical), "" when the request did not parse
  uint16_t port = 0;
  std::string address;     // the address connected to, "" when refused before
  bool allowed = false;
  std::string reason;      // why refused or why it ended early; "" for a normal end
  // When refused, by what (a fixed word, for counting): "policy" (no rule, SNI, a rule the proxy
  // cannot serve), "address" (a resolved address the rule does not permit), "limit" (a cap),
  // "request" (not a proxy request it can read) or "upstream" (no address, cannot connect).
  std::string refused_by;
  uint64_t bytes_out = 0;  // kernel → upstream
  uint64_t bytes_in = 0;   // upstream → kernel
  uint64_t requests = 0;
  double duration_ms = 0;
};
nlohmann::json audit_json(const AuditRecord& r);

// Appends lines to `path`; when it passes max_bytes its contents move to path.1 (the previous .1 is
// dropped), so the log never holds more than twice max_bytes. Both files are opened at start: the
// proxy drops its privileges afterwards and cannot create files then. runs in: one thread.
class AuditLog {
 public:
  AuditLog() = default;  // writes nowhere
  static common::Result<AuditLog> open(const std::string& path, uint64_t max_bytes);
  AuditLog(AuditLog&& other) noexcept;
  AuditLog& operator=(AuditLog&& other) noexcept;
  ~AuditLog();
  void write(const nlohmann::json& line);

 private:
  void rotate();
  std::string path_;
  uint64_t max_bytes_ = 0;
  uint64_t size_ = 0;
  int fd_ = -1;
  int previous_fd_ = -1;  // path.1
};

}  // namespace cellgate::egress
