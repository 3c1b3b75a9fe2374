// SPDX-License-Identifier: BSD-3-Clause
// decision: may this kernel reach this target, and at which address — the policy checks, as pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "egress/address.h"
#include "egress/policy.h"
#include "egress/target.h"

namespace cellgate::egress {

// An address and port the proxy never connects to, whatever a rule says (the gateway's own
// listeners). An unspecified address (0.0.0.0, ::) stands for every address of this host.
struct DeniedEndpoint {
  IpAddress address;
  uint16_t port = 0;
  std::string what;  // "the gateway"
};

// Order of checks: the target must match a rule (a name a host rule, an IP literal a CIDR rule);
// then, after resolution, choose_address picks the first resolved address that is permitted.
struct RuleMatch {
  const Rule* rule = nullptr;  // set when allowed
  std::string refusal;         // one line, when not
};
RuleMatch match_target(const Policy& policy, const Target& target);

struct AddressChoice {
  std::optional<IpAddress> address;  // the one to connect to: exactly this, so a second lookup
                                     // (DNS rebinding) cannot change what was checked
  std::string refusal;               // one line, when none is permitted
};
// An address is permitted when it is not a denied endpoint, and either is public and not one of
// this host's own, or lies in a range the rule names (its CIDR, or its `addresses`). Unspecified
// and multicast addresses never are.
AddressChoice choose_address(const Rule& rule, const Target& target, const std::vector<IpAddress>& resolved,
                             HostAddresses& host, const std::vector<DeniedEndpoint>& denied);

}  // namespace cellgate::egress
