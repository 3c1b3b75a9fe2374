// SPDX-License-Identifier: BSD-3-Clause
// audit_log: who started, stopped, restored or deleted what, as database rows and JSON lines.
#include "state/audit_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/core.h>

#include "common/time_format.h"
#include "state/rows.h"

namespace cellgate::state {

using common::Errc;
using common::make_error;
using common::Result;
using common::Status;
using nlohmann::json;

namespace {

constexpr const char* kRedacted = "[redacted]";

bool secret_key(std::string key) {
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* word : {"token", "password", "passwd", "secret", "authorization", "cookie"})
    if (key.find(word) != std::string::npos) return true;
  return key == "key" || key.ends_with("_key") || key.ends_with("-key");
}

json redact(const json& value) {
  if (value.is_object()) {
    json out = json::object();
    for (const auto& [k, v] : value.items()) out[k] = secret_key(k) ? json(kRedacted) : redact(v);
    return out;
  }
  if (value.is_array()) {
    json out = json::array();
    for (const auto& v : value) out.push_back(redact(v));
    return out;
  }
  return value;
}

// Replace, not throw, on invalid UTF-8: names and ids come from clients.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// Names and ids come from clients: stored as text every backend takes, the same as the JSON line
// shows them (invalid UTF-8 and NUL become U+FFFD).
std::string storable(const std::string& text) {
  std::string out = json::parse(dump(json(text))).get<std::string>();
  for (size_t pos = out.find('\0'); pos != std::string::npos; pos = out.find('\0', pos))
    out.replace(pos, 1, "\xEF\xBF\xBD");
  return out;
}

}  // namespace

json sanitize_audit_detail(const json& detail) {
  json clean = detail.is_object() ? redact(detail) : json{{"value", redact(detail)}};
  std::string text = dump(clean);
  if (text.size() > kMaxAuditDetailBytes) return json{{"truncated", true}, {"bytes", text.size()}};
  return clean;
}

Result<AuditLog> AuditLog::open(Database& db, const std::string& data_dir) {
  std::string path = (std::filesystem::path(data_dir) / "audit.log").string();
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    int err = errno;
    return make_error(Errc::kInternal, fmt::format("{}: cannot open: {}", path, std::strerror(err)), err);
  }
  return AuditLog(db, common::UniqueFd(fd), std::move(path));
}

Status AuditLog::record(const AuditEvent& event) {
  const std::string time = common::iso8601_now();
  const json detail = sanitize_audit_detail(event.detail);
  const std::string detail_text = dump(detail);
  const char* result = event.ok ? "ok" : "error";
  const std::string user = storable(event.user), action = storable(event.action),
                    kind = storable(event.object_kind), id = storable(event.object_id);
  auto st = db_->prepare(
      "INSERT INTO audit_log (time, \"user\", action, object_kind, object_id, detail, result) VALUES (?, ?, ?, ?, ?, ?, ?)");
  if (!st) return st.error();
  st->bind(1, time).bind(2, user).bind(3, action).bind(4, kind).bind(5, id);
  st->bind(6, detail_text).bind(7, result);
  if (auto s = st->run(); !s) return s;

  json line = {{"time", time},       {"user", user},    {"action", action}, {"object_kind", kind},
               {"object_id", id},     {"detail", detail}, {"result", result}};
  std::string text = dump(line) + "\n";
  // O_APPEND makes each write(2) seek to the end and write as one step (open(2)), so lines from
  // several writers interleave whole rather than overwrite each other. No user-space buffer: each line
  // reaches the kernel before record() returns.
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd_.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      return make_error(Errc::kInternal, fmt::format("{}: cannot append: {}", path_, std::strerror(err)), err);
    }
    done += static_cast<size_t>(n);
  }
  return common::ok();
}

Result<std::vector<AuditRecord>> AuditLog::recent(size_t limit) {
  auto st = db_->prepare(
      "SELECT seq, time, \"user\", action, object_kind, object_id, detail, result FROM audit_log ORDER BY seq DESC LIMIT ?");
  if (!st) return st.error();
  st->bind(1, static_cast<int64_t>(std::min<size_t>(limit, INT64_MAX)));
  return collect<AuditRecord>(*st, [](const Statement& row) {
    AuditRecord r;
    r.seq = row.column_int(0);
    r.time = row.column_text(1);
    r.event.user = row.column_text(2);
    r.event.action = row.column_text(3);
    r.event.object_kind = row.column_text(4);
    r.event.object_id = row.column_text(5);
    r.event.detail = json::parse(row.column_text(6), nullptr, false);
    r.event.ok = row.column_text(7) == "ok";
    return r;
  });
}

}  // namespace cellgate::state
