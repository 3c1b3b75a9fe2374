// SPDX-License-Identifier: BSD-3-Clause
// policy: a kernel's network policy (mode, allowlist rules, limits) — the data, its JSON form, its parser.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "egress/address.h"
#include "egress/target.h"

namespace cellgate::egress {

enum class Mode { kNone, kAllowlist };

struct PortRange {
  uint16_t first = 0;
  uint16_t last = 0;
  bool operator==(const PortRange&) const = default;
};

// A header the proxy sets on every request to the rule's hosts (replacing the kernel's own). The
// value is a template: ${secret:NAME} stands for a secret the proxy holds; the kernel never sees it.
struct HeaderRule {
  std::string name;
  std::string value;
  bool operator==(const HeaderRule&) const = default;
};

struct Rule {
  std::string host;               // exact canonical name or "*.suffix"; empty for a CIDR rule
  std::optional<Cidr> cidr;       // an IP rule: IP literals in this range (off unless allowed)
  std::vector<PortRange> ports;   // default: 443
  std::vector<Cidr> addresses;    // non-public addresses the name may resolve to (loopback, private …)
  std::vector<HeaderRule> headers;
  bool insecure_http = false;     // also inject the headers into plain-http requests (cleartext)
  bool allows_port(uint16_t port) const;
};

// Per-kernel caps; unset fields take the proxy's defaults (EgressDefaults).
struct Limits {
  std::optional<uint64_t> bytes_out;    // kernel → world, over the kernel's life
  std::optional<uint64_t> bytes_in;     // world → kernel
  std::optional<uint64_t> open;         // connections open at once
  std::optional<uint64_t> connections;  // connections and requests over the kernel's life
  std::optional<double> rate;           // new connections and requests per second (paced)
  std::optional<uint64_t> burst;        // how many may come at once
};

struct Policy {
  Mode mode = Mode::kNone;
  std::vector<Rule> allow;
  Limits limits;
  bool needs_interception() const;  // some rule injects headers
};

struct ParseOptions {
  bool ip_rules = false;   // accept {"cidr": ...} rules (off by default: names are what policy reviews)
  std::string field = "network";  // the prefix error messages name fields by
};

// Parses a policy document. Errors (kBadRequest) name the field: `network.allow[2].ports[0]: …`.
// A string rule is "host", "host:443", "host:80,443" or "*.suffix:8000-8100".
common::Result<Policy> parse_policy(const nlohmann::json& doc, const ParseOptions& options = {});
// The canonical form (objects for every rule; header values as their templates, never secrets).
nlohmann::json policy_json(const Policy& policy);
// The first rule that allows this target (host or IP literal, and port), or nullptr.
const Rule* find_rule(const Policy& policy, const Target& target);
// The ${secret:NAME} names one header value refers to.
std::vector<std::string> secret_names(const std::string& value);

}  // namespace cellgate::egress
