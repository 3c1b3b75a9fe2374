// SPDX-License-Identifier: BSD-3-Clause
// decision: which targets a policy allows and which resolved addresses the proxy may connect to.
#include "egress/decision.h"

#include <catch2/catch.hpp>

using namespace cellgate::egress;
using nlohmann::json;

namespace {

Policy policy(const char* text, bool ip_rules = false) {
  auto p = parse_policy(json::parse(text), ParseOptions{ip_rules, "network"});
  REQUIRE(p);
  return std::move(*p);
}

Target target(const char* authority) {
  auto t = parse_authority(authority, std::nullopt);
  REQUIRE(t);
  return *t;
}

std::vector<IpAddress> addrs(std::initializer_list<const char*> list) {
  std::vector<IpAddress> out;
  for (const char* a : list) out.push_back(*parse_ip_literal(a));
  return out;
}

struct Fixture {
  HostAddresses host;
  std::vector<DeniedEndpoint> denied{{*parse_ip_literal("0.0.0.0"), 8888, "the gateway"}};
  Fixture() { host.set_fixed(addrs({"127.0.0.1", "192.0.2.10", "::1"})); }
  AddressChoice choose(const Policy& p, const char* authority, std::initializer_list<const char*> resolved) {
    Target t = target(authority);
    RuleMatch m = match_target(p, t);
    REQUIRE(m.rule != nullptr);
    return choose_address(*m.rule, t, addrs(resolved), host, denied);
  }
};

}  // namespace

TEST_CASE("targets outside the allowlist are refused with a reason", "[egress]") {
  Policy p = policy(R"({"mode": "allowlist", "allow": ["pypi.org:443"]})");
  CHECK(match_target(p, target("pypi.org:443")).rule != nullptr);
  CHECK(match_target(p, target("evil.com:443")).refusal == "evil.com is not in the allowlist");
  CHECK(match_target(p, target("pypi.org:80")).refusal == "pypi.org port 80 is not allowed (allowed ports: 443)");
  CHECK(match_target(p, target("1.2.3.4:443")).refusal == "1.2.3.4 is an IP address; the allowlist names hosts only");
  CHECK(match_target(Policy{}, target("pypi.org:443")).refusal == "network access is off for this kernel");
}

TEST_CASE("a name that resolves to a special address is refused unless the rule names it", "[egress]") {
  Fixture f;
  Policy p = policy(R"({"mode": "allowlist", "allow": ["pypi.org", {"host": "mirror.test", "ports": [8080],
      "addresses": ["127.0.0.1"]}, {"host": "any.test", "ports": ["1-65535"], "addresses": ["0.0.0.0/0"]}]})");
  CHECK(f.choose(p, "pypi.org:443", {"151.101.0.223"}).address);
  CHECK(f.choose(p, "pypi.org:443", {"127.0.0.1"}).refusal == "pypi.org resolves to 127.0.0.1, a loopback address");
  CHECK(f.choose(p, "pypi.org:443", {"169.254.169.254"}).refusal ==
        "pypi.org resolves to 169.254.169.254, the cloud metadata address");
  CHECK(f.choose(p, "pypi.org:443", {"10.0.0.5"}).refusal.find("a private address") != std::string::npos);
  CHECK(f.choose(p, "pypi.org:443", {"::ffff:10.0.0.5"}).refusal.find("a private address") != std::string::npos);
  CHECK(f.choose(p, "pypi.org:443", {"192.0.2.10"}).refusal.find("reserved") != std::string::npos);
  // The first permitted address is the one connected to (never a second lookup: no rebinding).
  auto mixed = f.choose(p, "pypi.org:443", {"127.0.0.1", "151.101.0.223"});
  REQUIRE(mixed.address);
  CHECK(mixed.address->to_string() == "151.101.0.223");
  CHECK(f.choose(p, "mirror.test:8080", {"127.0.0.1"}).address);
  CHECK_FALSE(f.choose(p, "mirror.test:8080", {"127.0.0.2"}).address);
  // The gateway's own port stays refused even for a rule naming every address and port.
  CHECK(f.choose(p, "any.test:8888", {"127.0.0.1"}).refusal == "any.test resolves to 127.0.0.1, where port 8888 is the gateway");
  CHECK(f.choose(p, "any.test:8888", {"192.0.2.10"}).refusal.find("the gateway") != std::string::npos);
  CHECK(f.choose(p, "any.test:8889", {"127.0.0.1"}).address);
  // Unspecified and multicast addresses never, whatever is named.
  CHECK(f.choose(p, "any.test:80", {"0.0.0.0"}).refusal.find("unspecified") != std::string::npos);
  CHECK(f.choose(p, "any.test:80", {"224.0.0.1"}).refusal.find("multicast") != std::string::npos);
}

TEST_CASE("the host's own addresses are refused even when public", "[egress]") {
  Fixture f;
  f.host.set_fixed(addrs({"203.0.113.7", "127.0.0.1"}));
  Policy p = policy(R"({"mode": "allowlist", "allow": ["self.test"]})");
  CHECK(f.choose(p, "self.test:443", {"8.8.4.4"}).address);
  Fixture g;
  g.host.set_fixed(addrs({"8.8.4.4"}));
  CHECK(g.choose(p, "self.test:443", {"8.8.4.4"}).refusal == "self.test resolves to 8.8.4.4, an address of the proxy's host");
}

TEST_CASE("CIDR rules name their own addresses", "[egress]") {
  Fixture f;
  Policy p = policy(R"({"mode": "allowlist", "allow": [{"cidr": "10.1.0.0/16", "ports": [5432]},
      {"cidr": "::1", "ports": [8080]}]})", true);
  CHECK(f.choose(p, "10.1.2.3:5432", {"10.1.2.3"}).address);
  CHECK(match_target(p, target("10.2.0.1:5432")).refusal == "10.2.0.1 port 5432 is not in the allowlist");
  CHECK(f.choose(p, "[::1]:8080", {"::1"}).address);
}
