// SPDX-License-Identifier: BSD-3-Clause
// audit: who started, stopped, restored or deleted what (state::AuditLog). A record that cannot be
// written is logged; the request it records goes on.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace cellgate::state {
class AuditLog;
}

namespace cellgate::gateway {

// Io thread only (the log's database is single-threaded).
class Audit {
 public:
  explicit Audit(state::AuditLog& log) : log_(log) {}
  // user: who (a user name, or the gateway's own actor: "culler", "gateway"); kind: kernel,
  // workspace, snapshot...; ok: whether it succeeded.
  void record(const std::string& user, const std::string& action, const std::string& kind, const std::string& id,
              nlohmann::json detail = nlohmann::json::object(), bool ok = true);

 private:
  state::AuditLog& log_;
};

}  // namespace cellgate::gateway
