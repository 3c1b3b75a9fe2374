// SPDX-License-Identifier: BSD-3-Clause
// policy_bounds: a requested policy inside a user's bound, its inherited headers, its refusals.
#include "egress/policy_bounds.h"

#include <catch2/catch.hpp>

using namespace cellgate::egress;
using nlohmann::json;

namespace {
Policy parse(const char* text) {
  auto p = parse_policy(json::parse(text), ParseOptions{true, "network"});
  REQUIRE(p);
  return std::move(*p);
}
}  // namespace

TEST_CASE("host patterns nest", "[egress]") {
  CHECK(host_within("pypi.org", "pypi.org"));
  CHECK(host_within("files.pythonhosted.org", "*.pythonhosted.org"));
  CHECK(host_within("*.a.pythonhosted.org", "*.pythonhosted.org"));
  CHECK(host_within("*.pythonhosted.org", "*.pythonhosted.org"));
  CHECK_FALSE(host_within("pythonhosted.org", "*.pythonhosted.org"));
  CHECK_FALSE(host_within("*.org", "*.pythonhosted.org"));
  CHECK_FALSE(host_within("*.pythonhosted.org", "files.pythonhosted.org"));
  CHECK_FALSE(host_within("evilpythonhosted.org", "*.pythonhosted.org"));
}

TEST_CASE("a request inside the bound gets the bound's headers and limits", "[egress]") {
  Policy bound = parse(R"({"mode": "allowlist", "allow": ["*.pythonhosted.org", "pypi.org:443,80",
      {"host": "api.example.com", "headers": {"Authorization": "Bearer ${secret:k}"}},
      {"host": "*.corp.test", "ports": ["8000-8999"], "addresses": ["10.0.0.0/8"]},
      {"cidr": "203.0.113.0/24", "ports": [5432]}],
      "limits": {"bytes_out": "1G", "open": 10}})");
  auto n = narrow_policy(parse(R"({"mode": "allowlist", "allow": ["files.pythonhosted.org", "pypi.org",
      "api.example.com", {"host": "mirror.corp.test", "ports": [8080], "addresses": ["10.1.2.3"]},
      {"cidr": "203.0.113.8/29", "ports": [5432]}], "limits": {"open": 4}})"), bound);
  REQUIRE(n);
  CHECK(n->allow[2].headers.at(0).value == "Bearer ${secret:k}");
  CHECK(n->allow[0].headers.empty());
  CHECK(*n->limits.open == 4);
  CHECK(*n->limits.bytes_out == 1ULL << 30);
  CHECK_FALSE(n->limits.rate);  // unset in both: the proxy's default
  CHECK(narrow_policy(Policy{}, bound));  // mode none is always within
}

TEST_CASE("what lies outside the bound is refused, naming the field", "[egress]") {
  Policy bound = parse(R"({"mode": "allowlist", "allow": ["pypi.org", {"host": "*.corp.test", "ports": [8080],
      "addresses": ["10.0.0.0/8"]}], "limits": {"bytes_in": "1M"}})");
  struct Case {
    const char* request;
    const char* message;
  };
  for (const auto& c : std::vector<Case>{
           {R"({"mode": "allowlist", "allow": ["evil.com"]})", "network.allow[0]: evil.com (with these ports and addresses) is not within the network the user may have"},
           {R"({"mode": "allowlist", "allow": ["pypi.org", "pypi.org:80"]})", "network.allow[1]: pypi.org (with these ports"},
           {R"({"mode": "allowlist", "allow": [{"host": "a.corp.test", "ports": [8080], "addresses": ["127.0.0.1"]}]})", "network.allow[0]: a.corp.test"},
           {R"({"mode": "allowlist", "allow": [{"host": "pypi.org", "headers": {"X": "${secret:k}"}}]})", "network.allow[0].headers: headers come from the operator's rules"},
           {R"({"mode": "allowlist", "allow": [{"cidr": "10.0.0.0/8", "ports": [8080]}]})", "network.allow[0]: 10.0.0.0/8"},
           {R"({"mode": "allowlist", "limits": {"bytes_in": "2M"}})", "network.limits.bytes_in: more than the user may have"},
       }) {
    INFO(c.request);
    auto n = narrow_policy(parse(c.request), bound);
    REQUIRE_FALSE(n);
    CHECK(n.error().code == cellgate::common::Errc::kForbidden);
    CHECK(n.error().message.rfind(c.message, 0) == 0);
  }
  auto none = narrow_policy(parse(R"({"mode": "allowlist"})"), Policy{});
  REQUIRE_FALSE(none);
  CHECK(none.error().message == "network.mode: this user may not have network access");
}
