// SPDX-License-Identifier: BSD-3-Clause
// target: a destination (host and port) as a proxy request names it, in canonical form.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "egress/address.h"

namespace cellgate::egress {

struct Target {
  std::string host;             // lowercase, no trailing dot; an IPv6 literal without brackets
  uint16_t port = 0;
  std::optional<IpAddress> ip;  // set when host is an IP literal
  std::string authority() const;  // "example.com:443", "[::1]:8080"
};

// A DNS name in canonical form: ASCII letters, digits, '-' and '_' in labels of 1..63 bytes,
// at most 253 bytes, lowercased, one trailing dot dropped. nullopt for anything else, and for
// names whose last label is numeric or hex ("127.1", "0x7f.1", "2130706433"): the resolver would
// read those as IPv4 addresses.
std::optional<std::string> canonical_host_name(std::string_view text);

// "host:port", "[v6]:port" or (with default_port) "host" / "[v6]". The host is a canonical name
// or a canonical IP literal (parse_ip_literal). nullopt when anything is off.
std::optional<Target> parse_authority(std::string_view text, std::optional<uint16_t> default_port);

// A port number 1..65535 in decimal, nothing else.
std::optional<uint16_t> parse_port(std::string_view text);

// Whether host matches a rule's host: exactly, or for "*.suffix" any name with at least one more
// label ending in ".suffix" (not "suffix" itself). Both sides canonical.
bool host_matches(std::string_view pattern, std::string_view host);

}  // namespace cellgate::egress
