// SPDX-License-Identifier: BSD-3-Clause
// audit: who did what, recorded in the audit log.
#include "gateway/audit.h"

#include "common/log.h"
#include "state/audit_log.h"

namespace cellgate::gateway {

void Audit::record(const std::string& user, const std::string& action, const std::string& kind, const std::string& id,
                   nlohmann::json detail, bool ok) {
  auto st = log_.record({user, action, kind, id, std::move(detail), ok});
  if (!st) common::log_error("msg=\"audit log write failed\" error=\"{}\"", st.error().message);
}

}  // namespace cellgate::gateway
