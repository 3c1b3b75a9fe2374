// SPDX-License-Identifier: BSD-3-Clause
// kernel_network: the network policy a kernel gets, from its kernelspec, its owner's limit and the request.
#include "gateway/kernel_network.h"

#include "egress/policy_bounds.h"

namespace cellgate::gateway {

using common::Errc;
using common::make_error;

common::Result<std::optional<egress::Policy>> kernelspec_network(const launcher::KernelSpec& spec, bool ip_rules) {
  auto md = spec.metadata.find("cellgate");
  if (md == spec.metadata.end() || !md->is_object()) return std::optional<egress::Policy>();
  auto n = md->find("network");
  if (n == md->end() || n->is_null()) return std::optional<egress::Policy>();
  auto policy = egress::parse_policy(*n, {.ip_rules = ip_rules, .field = "metadata.cellgate.network"});
  if (!policy) return make_error(Errc::kBadRequest, "kernelspec " + spec.name + ": " + policy.error().message);
  return std::optional<egress::Policy>(std::move(policy.value()));
}

namespace {

common::Result<std::optional<egress::Policy>> user_limit(const state::User& user, bool ip_rules) {
  if (!user.limits.network) return std::optional<egress::Policy>();
  auto doc = nlohmann::json::parse(*user.limits.network, nullptr, false);
  // The CLI stored it canonical; a row edited by hand that no longer parses allows nothing.
  auto policy = egress::parse_policy(doc, {.ip_rules = ip_rules, .field = "network"});
  if (!policy)
    return make_error(Errc::kForbidden, "the network limit of user " + user.name + " is not valid: " + policy.error().message);
  return std::optional<egress::Policy>(std::move(policy.value()));
}

}  // namespace

common::Result<egress::Policy> kernel_network(const launcher::KernelSpec& spec, const state::User& user,
                                              const std::optional<nlohmann::json>& requested, bool ip_rules) {
  auto from_spec = kernelspec_network(spec, ip_rules);
  if (!from_spec) return from_spec.error();
  auto limit = user_limit(user, ip_rules);
  if (!limit) return limit.error();
  if (requested) {
    auto asked = egress::parse_policy(*requested, {.ip_rules = ip_rules, .field = "network"});
    if (!asked) return make_error(Errc::kBadRequest, asked.error().message);
    const egress::Policy bound = *limit ? **limit : from_spec->value_or(egress::Policy{});
    return egress::narrow_policy(asked.value(), bound, "network");
  }
  if (!*from_spec) return egress::Policy{};
  if (!*limit) return std::move(**from_spec);
  // The kernelspec's rules, judged as a request against the user's limit (whose headers they take).
  egress::Policy asked = **from_spec;
  for (auto& r : asked.allow) {
    r.headers.clear();
    r.insecure_http = false;
  }
  auto narrowed = egress::narrow_policy(asked, **limit, "kernelspec " + spec.name + ": metadata.cellgate.network");
  if (!narrowed)
    return make_error(Errc::kForbidden, narrowed.error().message + " (pass a \"network\" within it, or none)");
  return narrowed;
}

}  // namespace cellgate::gateway
