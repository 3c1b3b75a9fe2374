// SPDX-License-Identifier: BSD-3-Clause
// decision: may this kernel reach this target, and at which address — the policy checks, as pure functions.
#include "egress/decision.h"

#include <fmt/core.h>

namespace cellgate::egress {
namespace {

std::string ports_text(const Rule& r) {
  std::string out;
  for (const auto& p : r.ports) {
    if (!out.empty()) out += ",";
    out += p.first == p.last ? std::to_string(p.first) : fmt::format("{}-{}", p.first, p.last);
  }
  return out;
}

bool named_by(const Rule& rule, const IpAddress& a) {
  if (rule.cidr && rule.cidr->contains(a)) return true;
  for (const auto& c : rule.addresses) {
    if (c.contains(a)) return true;
  }
  return false;
}

// Why this address may not be used for this rule, or nullopt when it may: what the address is
// ("a loopback address"), or for a denied endpoint what listens there ("the gateway").
struct Why {
  std::string what;
  bool endpoint = false;
};
std::optional<Why> address_refusal(const Rule& rule, const IpAddress& a, uint16_t port, HostAddresses& host,
                                   const std::vector<DeniedEndpoint>& denied) {
  AddressClass cls = classify(a);
  for (const auto& d : denied) {
    if (d.port != port) continue;
    bool any = d.address.is_unspecified();
    if (d.address == a || (any && (cls == AddressClass::kLoopback || host.contains(a)))) return Why{d.what, true};
  }
  if (cls == AddressClass::kUnspecified || cls == AddressClass::kMulticast) return Why{describe(cls)};
  if (named_by(rule, a)) return std::nullopt;
  if (cls != AddressClass::kPublic) return Why{describe(cls)};
  if (host.contains(a)) return Why{"an address of the proxy's host"};
  return std::nullopt;
}

std::string refusal_text(const Target& target, const IpAddress& a, const Why& why) {
  const std::string addr = a.to_string();
  if (target.ip) {
    return why.endpoint ? fmt::format("{} port {} is {}", addr, target.port, why.what) : fmt::format("{} is {}", addr, why.what);
  }
  if (why.endpoint) return fmt::format("{} resolves to {}, where port {} is {}", target.host, addr, target.port, why.what);
  return fmt::format("{} resolves to {}, {}", target.host, addr, why.what);
}

}  // namespace

RuleMatch match_target(const Policy& policy, const Target& target) {
  if (policy.mode != Mode::kAllowlist) return {nullptr, "network access is off for this kernel"};
  if (const Rule* r = find_rule(policy, target)) return {r, ""};
  if (target.ip) {
    bool any_ip_rule = false;
    for (const auto& r : policy.allow) any_ip_rule = any_ip_rule || r.cidr.has_value();
    if (!any_ip_rule) return {nullptr, fmt::format("{} is an IP address; the allowlist names hosts only", target.host)};
    return {nullptr, fmt::format("{} port {} is not in the allowlist", target.host, target.port)};
  }
  // Say which ports the host would have had: "port 80 is not allowed" reads better than "not allowed".
  for (const auto& r : policy.allow) {
    if (!r.cidr && host_matches(r.host, target.host))
      return {nullptr, fmt::format("{} port {} is not allowed (allowed ports: {})", target.host, target.port, ports_text(r))};
  }
  return {nullptr, fmt::format("{} is not in the allowlist", target.host)};
}

AddressChoice choose_address(const Rule& rule, const Target& target, const std::vector<IpAddress>& resolved,
                             HostAddresses& host, const std::vector<DeniedEndpoint>& denied) {
  std::string first_refusal;
  for (const auto& a : resolved) {
    auto why = address_refusal(rule, a, target.port, host, denied);
    if (!why) return {a, ""};
    if (first_refusal.empty()) first_refusal = refusal_text(target, a, *why);
  }
  if (first_refusal.empty()) return {std::nullopt, fmt::format("{} has no address", target.host)};
  return {std::nullopt, first_refusal};
}

}  // namespace cellgate::egress
