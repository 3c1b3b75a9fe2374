// SPDX-License-Identifier: BSD-3-Clause
// policy_bounds: a requested policy narrowed to what a bound (a user's limits) allows.
#include "egress/policy_bounds.h"

#include <fmt/core.h>

namespace cellgate::egress {
namespace {

using common::Errc;
using common::make_error;

bool cidr_within(const Cidr& inner, const Cidr& outer) {
  return inner.base.is_v4() == outer.base.is_v4() && inner.prefix >= outer.prefix && outer.contains(inner.base);
}

bool ports_within(const std::vector<PortRange>& inner, const std::vector<PortRange>& outer) {
  for (const auto& r : inner) {
    bool covered = false;
    for (const auto& o : outer) covered = covered || (r.first >= o.first && r.last <= o.last);
    if (!covered) return false;
  }
  return true;
}

bool addresses_within(const std::vector<Cidr>& inner, const std::vector<Cidr>& outer) {
  for (const auto& c : inner) {
    bool covered = false;
    for (const auto& o : outer) covered = covered || cidr_within(c, o);
    if (!covered) return false;
  }
  return true;
}

bool rule_within(const Rule& r, const Rule& bound) {
  if (r.cidr.has_value() != bound.cidr.has_value()) return false;
  if (r.cidr ? !cidr_within(*r.cidr, *bound.cidr) : !host_within(r.host, bound.host)) return false;
  return ports_within(r.ports, bound.ports) && addresses_within(r.addresses, bound.addresses);
}

template <class T>
common::Status cap(std::optional<T>& asked, const std::optional<T>& bound, const std::string& field) {
  if (!asked) {
    asked = bound;
    return common::ok();
  }
  if (bound && *asked > *bound) return make_error(Errc::kForbidden, field + ": more than the user may have");
  return common::ok();
}

}  // namespace

bool host_within(const std::string& inner, const std::string& outer) {
  if (inner == outer) return true;
  if (!outer.starts_with("*.")) return false;
  const std::string_view suffix = std::string_view(outer).substr(1);  // ".b.com"
  std::string_view name = inner.starts_with("*.") ? std::string_view(inner).substr(2) : std::string_view(inner);
  // "*.b.com" covers "a.b.com" and "*.a.b.com", not "b.com" nor "*.b.com"'s own suffix twice.
  return name.size() > suffix.size() && name.ends_with(suffix);
}

common::Result<Policy> narrow_policy(const Policy& request, const Policy& bound, const std::string& field) {
  if (request.mode == Mode::kNone) return request;
  if (bound.mode == Mode::kNone)
    return make_error(Errc::kForbidden, field + ".mode: this user may not have network access");
  Policy out = request;
  for (size_t i = 0; i < out.allow.size(); ++i) {
    Rule& r = out.allow[i];
    const std::string f = fmt::format("{}.allow[{}]", field, i);
    if (!r.headers.empty() || r.insecure_http)
      return make_error(Errc::kForbidden, f + ".headers: headers come from the operator's rules, not from a request");
    const Rule* cover = nullptr;
    for (const auto& b : bound.allow) {
      if (rule_within(r, b)) {
        cover = &b;
        break;
      }
    }
    if (cover == nullptr) {
      std::string what = r.cidr ? r.cidr->str() : r.host;
      return make_error(Errc::kForbidden, f + ": " + what + " (with these ports and addresses) is not within the network the user may have");
    }
    r.headers = cover->headers;
    r.insecure_http = cover->insecure_http;
  }
  const Limits& b = bound.limits;
  Limits& l = out.limits;
  const std::string lf = field + ".limits.";
  for (auto s : {cap(l.bytes_out, b.bytes_out, lf + "bytes_out"), cap(l.bytes_in, b.bytes_in, lf + "bytes_in"),
                 cap(l.open, b.open, lf + "open"), cap(l.connections, b.connections, lf + "connections"),
                 cap(l.rate, b.rate, lf + "rate"), cap(l.burst, b.burst, lf + "burst")}) {
    if (!s) return s.error();
  }
  return out;
}

}  // namespace cellgate::egress
