// SPDX-License-Identifier: BSD-3-Clause
// policy_bounds: a requested policy narrowed to what a bound (a user's limits) allows.
#pragma once

#include <string>

#include "common/result.h"
#include "egress/policy.h"

namespace cellgate::egress {

// The policy a kernel gets when `request` asks within `bound`. Every requested rule must lie inside
// one rule of the bound: its hosts (an exact name, or a *.suffix inside the bound's), its CIDR, its
// ports and its addresses all inside that rule's. A request never brings headers of its own: a rule
// inherits the headers (and insecure_http) of the bound's rule that covers it, so credentials go only
// where the operator sent them. Limits the request leaves out take the bound's; those it sets may
// not exceed them. Errors (kForbidden) name the field: `network.allow[1]: api.other.com is not
// within the network the user may have`; `network.limits.bytes_out: more than the user may have`.
common::Result<Policy> narrow_policy(const Policy& request, const Policy& bound, const std::string& field = "network");

// Whether `inner` names only hosts `outer` names ("a.b.com" in "*.b.com"; "*.a.b.com" in "*.b.com").
bool host_within(const std::string& inner, const std::string& outer);

}  // namespace cellgate::egress
