// SPDX-License-Identifier: BSD-3-Clause
// kernel_network: a kernel's policy from its kernelspec, its owner's limit and the request.
#include "gateway/kernel_network.h"

#include <catch2/catch.hpp>

using cellgate::common::Errc;
using cellgate::gateway::kernel_network;
using cellgate::gateway::kernelspec_network;
using nlohmann::json;

namespace {

cellgate::launcher::KernelSpec spec_with(const json& network) {
  cellgate::launcher::KernelSpec s;
  s.name = "py-net";
  if (!network.is_null()) s.metadata = {{"cellgate", {{"network", network}}}};
  return s;
}

const json kSpecNetwork = {{"mode", "allowlist"},
                           {"allow", {"pypi.corp.test", {{"host", "api.test"}, {"headers", {{"Authorization", "Bearer ${secret:k}"}}}}}}};

cellgate::state::User user(std::optional<json> limit = std::nullopt) {
  cellgate::state::User u;
  u.name = "alice";
  if (limit) u.limits.network = limit->dump();
  return u;
}

std::vector<std::string> hosts(const cellgate::egress::Policy& p) {
  std::vector<std::string> out;
  for (const auto& r : p.allow) out.push_back(r.host);
  return out;
}

}  // namespace

TEST_CASE("a kernelspec's network policy: absent, valid, or an error naming the kernelspec and field", "[gateway]") {
  CHECK_FALSE(kernelspec_network(spec_with(nullptr), false).value().has_value());
  auto ok = kernelspec_network(spec_with(kSpecNetwork), false);
  REQUIRE(ok);
  REQUIRE(ok->has_value());
  CHECK(hosts(**ok) == std::vector<std::string>{"pypi.corp.test", "api.test"});
  auto bad = kernelspec_network(spec_with({{"mode", "allowlist"}, {"allow", {{{"host", "x.test"}, {"ports", {0}}}}}}), false);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == Errc::kBadRequest);
  CHECK(bad.error().message.rfind("kernelspec py-net: metadata.cellgate.network.allow[0].ports[0]", 0) == 0);
  CHECK_FALSE(kernelspec_network(spec_with({{"mode", "allowlist"}, {"allow", {{{"cidr", "10.0.0.0/8"}}}}}), false));
  CHECK(kernelspec_network(spec_with({{"mode", "allowlist"}, {"allow", {{{"cidr", "10.0.0.0/8"}}}}}), true));
}

TEST_CASE("without a request a kernel gets its kernelspec's policy, within the user's limit", "[gateway]") {
  CHECK(kernel_network(spec_with(nullptr), user(), std::nullopt, false)->mode == cellgate::egress::Mode::kNone);
  auto from_spec = kernel_network(spec_with(kSpecNetwork), user(), std::nullopt, false);
  REQUIRE(from_spec);
  CHECK(hosts(*from_spec) == std::vector<std::string>{"pypi.corp.test", "api.test"});
  CHECK(from_spec->allow[1].headers.size() == 1);
  // A user whose limit does not cover the kernelspec's rules: refused, naming the rule.
  auto narrower = kernel_network(spec_with(kSpecNetwork), user(json{{"mode", "allowlist"}, {"allow", {"*.corp.test"}}}),
                                 std::nullopt, false);
  REQUIRE_FALSE(narrower);
  CHECK(narrower.error().code == Errc::kForbidden);
  CHECK(narrower.error().message.find("metadata.cellgate.network.allow[1]") != std::string::npos);
  auto revoked = kernel_network(spec_with(kSpecNetwork), user(json{{"mode", "none"}}), std::nullopt, false);
  REQUIRE_FALSE(revoked);
  CHECK(revoked.error().code == Errc::kForbidden);
}

TEST_CASE("a requested policy is narrowed to the user's limit, else to the kernelspec's", "[gateway]") {
  const json ask = {{"mode", "allowlist"}, {"allow", {"api.test"}}};
  auto within_spec = kernel_network(spec_with(kSpecNetwork), user(), ask, false);
  REQUIRE(within_spec);
  CHECK(hosts(*within_spec) == std::vector<std::string>{"api.test"});
  CHECK(within_spec->allow[0].headers.at(0).value == "Bearer ${secret:k}");  // the operator's, inherited
  // The user's limit, not the kernelspec, is the bound when an admin set one.
  auto by_limit = kernel_network(spec_with(nullptr), user(json{{"mode", "allowlist"}, {"allow", {"*.test"}}}), ask, false);
  REQUIRE(by_limit);
  CHECK(by_limit->allow[0].headers.empty());
  auto outside = kernel_network(spec_with(kSpecNetwork), user(), json{{"mode", "allowlist"}, {"allow", {"evil.test"}}}, false);
  REQUIRE_FALSE(outside);
  CHECK(outside.error().code == Errc::kForbidden);
  CHECK(outside.error().message.rfind("network.allow[0]", 0) == 0);
  auto no_bound = kernel_network(spec_with(nullptr), user(), ask, false);
  REQUIRE_FALSE(no_bound);
  CHECK(no_bound.error().message.find("network.mode") != std::string::npos);
  auto malformed = kernel_network(spec_with(kSpecNetwork), user(), json{{"mode", "sometimes"}}, false);
  REQUIRE_FALSE(malformed);
  CHECK(malformed.error().code == Errc::kBadRequest);
  CHECK(malformed.error().message.rfind("network.mode", 0) == 0);
  auto own_headers = kernel_network(
      spec_with(kSpecNetwork), user(),
      json{{"mode", "allowlist"}, {"allow", {{{"host", "api.test"}, {"headers", {{"Authorization", "x"}}}}}}}, false);
  REQUIRE_FALSE(own_headers);
  CHECK(own_headers.error().message.find("headers") != std::string::npos);
  CHECK(kernel_network(spec_with(nullptr), user(), json{{"mode", "none"}}, false)->mode == cellgate::egress::Mode::kNone);
}
