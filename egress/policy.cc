// SPDX-License-Identifier: BSD-3-Clause
// policy: a kernel's network policy (mode, allowlist rules, limits) — the data, its JSON form, its parser.
#include "egress/policy.h"

#include <cmath>
#include <set>

#include <fmt/core.h>

#include "common/size_text.h"

namespace cellgate::egress {
namespace {

using common::Errc;
using common::make_error;
using nlohmann::json;

constexpr size_t kMaxRules = 256;
constexpr size_t kMaxListItems = 64;
constexpr size_t kMaxHeaderValue = 8192;

// Headers that frame the message or route it: a rule setting them would break or redirect the request.
const std::set<std::string> kReservedHeaders = {
    "host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te", "trailer",
    "proxy-connection", "proxy-authorization", "proxy-authenticate", "expect"};

struct Parser {
  const ParseOptions& opt;

  common::Error bad(const std::string& field, const std::string& why) const {
    return make_error(Errc::kBadRequest, opt.field + field + ": " + why);
  }

  static std::optional<PortRange> port_range(std::string_view text) {
    size_t dash = text.find('-');
    auto first = parse_port(text.substr(0, dash));
    auto last = dash == std::string_view::npos ? first : parse_port(text.substr(dash + 1));
    if (!first || !last || *last < *first) return std::nullopt;
    return PortRange{*first, *last};
  }

  common::Result<std::vector<PortRange>> ports(const std::string& field, const json& j) const {
    std::vector<PortRange> out;
    if (!j.is_array() || j.empty() || j.size() > kMaxListItems)
      return bad(field, "must be a list of 1 to 64 ports or \"first-last\" ranges");
    for (size_t i = 0; i < j.size(); ++i) {
      const auto& p = j[i];
      std::optional<PortRange> r;
      if (p.is_number_unsigned() && p.get<uint64_t>() >= 1 && p.get<uint64_t>() <= 65535) {
        auto v = static_cast<uint16_t>(p.get<uint64_t>());
        r = PortRange{v, v};
      } else if (p.is_string()) {
        r = port_range(p.get_ref<const std::string&>());
      }
      if (!r) return bad(fmt::format("{}[{}]", field, i), "not a port (1-65535) or a \"first-last\" range");
      out.push_back(*r);
    }
    return out;
  }

  common::Result<std::string> host(const std::string& field, const std::string& text) const {
    bool wildcard = text.starts_with("*.");
    auto name = canonical_host_name(wildcard ? std::string_view(text).substr(2) : std::string_view(text));
    if (!name) {
      if (parse_ip_literal(text) || parse_cidr(text))
        return bad(field, "\"" + text + "\" is an address: use {\"cidr\": ...} (an IP rule)");
      return bad(field, "not a host name or *.suffix pattern");
    }
    return wildcard ? "*." + *name : *name;
  }

  common::Result<Rule> string_rule(const std::string& field, const std::string& text) const {
    Rule r;
    size_t colon = text.find(':');
    auto h = host(field, text.substr(0, colon));
    if (!h) return h.error();
    r.host = std::move(*h);
    if (colon == std::string::npos) {
      r.ports = {{443, 443}};
      return r;
    }
    std::string_view list = std::string_view(text).substr(colon + 1);
    size_t start = 0;
    while (start <= list.size()) {
      size_t comma = list.find(',', start);
      auto pr = port_range(list.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
      if (!pr || r.ports.size() >= kMaxListItems) return bad(field, "ports after ':' must be like 443, 80,443 or 8000-8100");
      r.ports.push_back(*pr);
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    return r;
  }

  common::Result<std::vector<HeaderRule>> headers(const std::string& field, const json& j) const {
    std::vector<HeaderRule> out;
    if (!j.is_object() || j.size() > 16) return bad(field, "must be an object of at most 16 header: value strings");
    for (const auto& [name, value] : j.items()) {
      const std::string f = field + "." + name;
      bool token = !name.empty() && name.size() <= 64;
      for (char c : name) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
        token = token && ok;
      }
      if (!token) return bad(f, "not a header name (letters, digits, '-' and '_')");
      std::string lower = name;
      for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
      if (kReservedHeaders.count(lower)) return bad(f, "this header frames or routes the request; it cannot be set");
      if (!value.is_string()) return bad(f, "must be a string");
      const auto& v = value.get_ref<const std::string&>();
      if (v.size() > kMaxHeaderValue) return bad(f, "longer than 8192 bytes");
      for (unsigned char c : v) {
        if (c < 0x20 || c == 0x7f) return bad(f, "control characters are not allowed in a header value");
      }
      size_t refs = 0;
      for (size_t at = v.find("${"); at != std::string::npos; at = v.find("${", at + 2)) ++refs;
      if (secret_names(v).size() != refs) return bad(f, "a ${...} must be ${secret:NAME} (NAME: letters, digits, '_', '-', '.')");
      out.push_back(HeaderRule{name, v});
    }
    return out;
  }

  common::Result<Rule> object_rule(const std::string& field, const json& j) const {
    static const std::set<std::string> kKeys = {"host", "cidr", "ports", "addresses", "headers", "insecure_http"};
    for (const auto& [k, v] : j.items()) {
      if (!kKeys.count(k)) return bad(field + "." + k, "unknown key (host, cidr, ports, addresses, headers, insecure_http)");
    }
    Rule r;
    bool has_host = j.contains("host"), has_cidr = j.contains("cidr");
    if (has_host == has_cidr) return bad(field, "a rule names exactly one of host or cidr");
    if (has_host) {
      if (!j["host"].is_string()) return bad(field + ".host", "must be a string");
      auto h = host(field + ".host", j["host"].get<std::string>());
      if (!h) return h.error();
      r.host = std::move(*h);
    } else {
      if (!opt.ip_rules) return bad(field + ".cidr", "IP rules are off (the gateway's --egress-ip-rules turns them on)");
      auto c = j["cidr"].is_string() ? parse_cidr(j["cidr"].get<std::string>()) : std::nullopt;
      if (!c) return bad(field + ".cidr", "not an address or CIDR range (\"203.0.113.0/24\", \"2001:db8::/32\")");
      r.cidr = *c;
    }
    if (j.contains("ports")) {
      auto p = ports(field + ".ports", j["ports"]);
      if (!p) return p.error();
      r.ports = std::move(*p);
    } else {
      r.ports = {{443, 443}};
    }
    if (j.contains("addresses")) {
      if (!has_host) return bad(field + ".addresses", "only a host rule names the addresses its name may resolve to");
      const auto& a = j["addresses"];
      if (!a.is_array() || a.empty() || a.size() > kMaxListItems) return bad(field + ".addresses", "must be a list of 1 to 64 addresses or CIDR ranges");
      for (size_t i = 0; i < a.size(); ++i) {
        auto c = a[i].is_string() ? parse_cidr(a[i].get<std::string>()) : std::nullopt;
        if (!c) return bad(fmt::format("{}.addresses[{}]", field, i), "not an address or CIDR range");
        r.addresses.push_back(*c);
      }
    }
    if (j.contains("headers")) {
      if (!has_host) return bad(field + ".headers", "headers are set for host rules only");
      auto h = headers(field + ".headers", j["headers"]);
      if (!h) return h.error();
      r.headers = std::move(*h);
    }
    if (j.contains("insecure_http")) {
      if (!j["insecure_http"].is_boolean()) return bad(field + ".insecure_http", "must be true or false");
      r.insecure_http = j["insecure_http"].get<bool>();
    }
    return r;
  }

  common::Status limits(const json& j, Limits& out) const {
    if (!j.is_object()) return bad(".limits", "must be an object");
    for (const auto& [k, v] : j.items()) {
      const std::string f = ".limits." + k;
      if (k == "bytes_out" || k == "bytes_in") {
        uint64_t n = 0;
        bool ok = (v.is_number_unsigned() && (n = v.get<uint64_t>()) > 0) ||
                  (v.is_string() && common::parse_size(v.get_ref<const std::string&>(), n));
        if (!ok) return bad(f, "must be a byte count (a number, or a string like \"512M\", \"10G\")");
        (k == "bytes_out" ? out.bytes_out : out.bytes_in) = n;
      } else if (k == "open" || k == "connections" || k == "burst") {
        if (!v.is_number_unsigned() || v.get<uint64_t>() == 0 || v.get<uint64_t>() > (1ULL << 40))
          return bad(f, "must be a positive integer");
        (k == "open" ? out.open : k == "connections" ? out.connections : out.burst) = v.get<uint64_t>();
      } else if (k == "rate") {
        if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0 || v.get<double>() > 1e6)
          return bad(f, "must be a number of requests per second (0 < rate <= 1000000)");
        out.rate = v.get<double>();
      } else {
        return bad(f, "unknown key (bytes_out, bytes_in, open, connections, rate, burst)");
      }
    }
    return common::ok();
  }
};

json ports_json(const std::vector<PortRange>& ports) {
  json out = json::array();
  for (const auto& p : ports) {
    if (p.first == p.last) out.push_back(p.first);
    else out.push_back(fmt::format("{}-{}", p.first, p.last));
  }
  return out;
}

}  // namespace

bool Rule::allows_port(uint16_t port) const {
  for (const auto& r : ports) {
    if (port >= r.first && port <= r.last) return true;
  }
  return false;
}

bool Policy::needs_interception() const {
  for (const auto& r : allow) {
    if (!r.headers.empty()) return true;
  }
  return false;
}

std::vector<std::string> secret_names(const std::string& value) {
  std::vector<std::string> out;
  for (size_t at = value.find("${secret:"); at != std::string::npos; at = value.find("${secret:", at + 1)) {
    size_t start = at + 9, close = value.find('}', start);
    if (close == std::string::npos || close == start || close - start > 128) continue;
    std::string name = value.substr(start, close - start);
    bool ok = true;
    for (char c : name) {
      ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.');
    }
    if (ok) out.push_back(std::move(name));
  }
  return out;
}

common::Result<Policy> parse_policy(const json& doc, const ParseOptions& options) {
  Parser p{options};
  Policy policy;
  if (!doc.is_object()) return p.bad("", "must be an object like {\"mode\": \"allowlist\", \"allow\": [...]}");
  static const std::set<std::string> kKeys = {"mode", "allow", "limits"};
  for (const auto& [k, v] : doc.items()) {
    if (!kKeys.count(k)) return p.bad("." + k, "unknown key (mode, allow, limits)");
  }
  auto mode = doc.find("mode");
  if (mode != doc.end()) {
    if (*mode == "none") policy.mode = Mode::kNone;
    else if (*mode == "allowlist") policy.mode = Mode::kAllowlist;
    else return p.bad(".mode", "must be \"none\" or \"allowlist\"");
  }
  if (auto allow = doc.find("allow"); allow != doc.end()) {
    if (policy.mode != Mode::kAllowlist) return p.bad(".allow", "rules need \"mode\": \"allowlist\"");
    if (!allow->is_array() || allow->size() > kMaxRules) return p.bad(".allow", "must be a list of at most 256 rules");
    for (size_t i = 0; i < allow->size(); ++i) {
      const std::string f = fmt::format(".allow[{}]", i);
      const auto& r = (*allow)[i];
      common::Result<Rule> rule = r.is_string() ? p.string_rule(f, r.get<std::string>())
                                  : r.is_object() ? p.object_rule(f, r)
                                                  : common::Result<Rule>(p.bad(f, "a rule is a string (\"host:443\") or an object"));
      if (!rule) return rule.error();
      policy.allow.push_back(std::move(*rule));
    }
  }
  if (auto limits = doc.find("limits"); limits != doc.end()) {
    if (auto s = p.limits(*limits, policy.limits); !s) return s.error();
  }
  return policy;
}

json policy_json(const Policy& policy) {
  json out = {{"mode", policy.mode == Mode::kAllowlist ? "allowlist" : "none"}};
  if (policy.mode == Mode::kNone) return out;
  json rules = json::array();
  for (const auto& r : policy.allow) {
    json j = json::object();
    if (r.cidr) j["cidr"] = r.cidr->str();
    else j["host"] = r.host;
    j["ports"] = ports_json(r.ports);
    if (!r.addresses.empty()) {
      j["addresses"] = json::array();
      for (const auto& a : r.addresses) j["addresses"].push_back(a.str());
    }
    if (!r.headers.empty()) {
      j["headers"] = json::object();
      for (const auto& h : r.headers) j["headers"][h.name] = h.value;
    }
    if (r.insecure_http) j["insecure_http"] = true;
    rules.push_back(std::move(j));
  }
  out["allow"] = std::move(rules);
  json limits = json::object();
  const Limits& l = policy.limits;
  if (l.bytes_out) limits["bytes_out"] = *l.bytes_out;
  if (l.bytes_in) limits["bytes_in"] = *l.bytes_in;
  if (l.open) limits["open"] = *l.open;
  if (l.connections) limits["connections"] = *l.connections;
  if (l.rate) limits["rate"] = *l.rate;
  if (l.burst) limits["burst"] = *l.burst;
  if (!limits.empty()) out["limits"] = std::move(limits);
  return out;
}

const Rule* find_rule(const Policy& policy, const Target& target) {
  if (policy.mode != Mode::kAllowlist) return nullptr;
  for (const auto& r : policy.allow) {
    if (!r.allows_port(target.port)) continue;
    if (target.ip) {
      if (r.cidr && r.cidr->contains(*target.ip)) return &r;
    } else if (!r.cidr && host_matches(r.host, target.host)) {
      return &r;
    }
  }
  return nullptr;
}

}  // namespace cellgate::egress
