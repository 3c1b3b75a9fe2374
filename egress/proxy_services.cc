// SPDX-License-Identifier: BSD-3-Clause
// proxy_services: what every proxied connection uses (resolver, checks, TLS, secrets, audit) and its timeouts.
#include "egress/proxy_services.h"

namespace cellgate::egress {

void ProxyServices::record(KernelState& kernel, const AuditRecord& r) {
  if (!r.allowed) ++kernel.counters.refused;
  auto line = audit_json(r);
  if (audit != nullptr) audit->write(line);
  if (!r.allowed && refusals != nullptr) refusals->publish(line);
  kernel.remember(std::move(line));
}

}  // namespace cellgate::egress
