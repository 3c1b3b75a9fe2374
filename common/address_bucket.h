// SPDX-License-Identifier: BSD-3-Clause
// address_bucket: the key under which a per-address budget charges a client.
#pragma once

#include <string>
#include <string_view>

namespace cellgate::common {

// An IPv4 address as it is; an IPv6 address by its /64, as "2001:db8:1:2::/64"; an IPv4-mapped IPv6
// address (::ffff:a.b.c.d, what a dual-stack listener reports) as its IPv4 address; anything else
// (not an address) as it is.
//
// Why the /64: one host or subscriber is given a whole /64 (RFC 7934 recommends a /64 per host, and
// SLAAC needs one), so it can send from 2^64 addresses. A budget per whole IPv6 address (failed
// logins, waiting token lookups) bounds nothing against it, and its fresh addresses evict everyone
// else's entries from the tables that remember them. nginx and fail2ban offer the same mask.
std::string address_bucket(std::string_view ip);

}  // namespace cellgate::common
