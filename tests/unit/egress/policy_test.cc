// SPDX-License-Identifier: BSD-3-Clause
// policy: the format (string and object rules, limits), its canonical form, errors that name the field.
#include "egress/policy.h"

#include <catch2/catch.hpp>

using namespace cellgate::egress;
using nlohmann::json;

namespace {
std::string error_of(const json& doc, ParseOptions o = {}) {
  auto p = parse_policy(doc, o);
  REQUIRE_FALSE(p);
  return p.error().message;
}
}  // namespace

TEST_CASE("the default is mode none, and none allows nothing", "[egress]") {
  auto p = parse_policy(json::object());
  REQUIRE(p);
  CHECK(p->mode == Mode::kNone);
  CHECK(policy_json(*p) == json{{"mode", "none"}});
  CHECK(find_rule(*p, *parse_authority("pypi.org:443", std::nullopt)) == nullptr);
}

TEST_CASE("string rules: host, host:ports, *.suffix with ranges", "[egress]") {
  auto p = parse_policy(json::parse(R"({"mode": "allowlist",
      "allow": ["pypi.org", "*.pythonhosted.org:443", "mirror.internal:80,8000-8100"]})"));
  REQUIRE(p);
  REQUIRE(p->allow.size() == 3);
  CHECK(p->allow[0].ports == std::vector<PortRange>{{443, 443}});
  CHECK(p->allow[1].host == "*.pythonhosted.org");
  CHECK(p->allow[2].ports == std::vector<PortRange>{{80, 80}, {8000, 8100}});
  auto at = [&](const char* a) { return find_rule(*p, *parse_authority(a, std::nullopt)); };
  CHECK(at("pypi.org:443") == &p->allow[0]);
  CHECK(at("PYPI.ORG:443") == &p->allow[0]);  // targets are canonical before they are matched
  CHECK(at("pypi.org:80") == nullptr);
  CHECK(at("files.pythonhosted.org:443") == &p->allow[1]);
  CHECK(at("pythonhosted.org:443") == nullptr);
  CHECK(at("mirror.internal:8050") == &p->allow[2]);
  CHECK(at("mirror.internal:8101") == nullptr);
  CHECK(at("1.2.3.4:443") == nullptr);
}

TEST_CASE("object rules carry addresses, headers and the canonical form round-trips", "[egress]") {
  const json doc = json::parse(R"({"mode": "allowlist", "allow": [
      {"host": "Mirror.Test", "ports": [8080, "9000-9001"], "addresses": ["127.0.0.1", "10.0.0.0/8"]},
      {"host": "api.example.com", "headers": {"Authorization": "Bearer ${secret:example}"}}],
      "limits": {"bytes_out": "1M", "bytes_in": 2048, "open": 4, "connections": 100, "rate": 2.5, "burst": 3}})");
  auto p = parse_policy(doc);
  REQUIRE(p);
  CHECK(p->allow[0].host == "mirror.test");
  CHECK(p->allow[0].addresses.size() == 2);
  CHECK(p->allow[1].headers.at(0).value == "Bearer ${secret:example}");
  CHECK(p->needs_interception());
  CHECK(*p->limits.bytes_out == 1ULL << 20);
  CHECK(*p->limits.rate == Approx(2.5));
  json canonical = policy_json(*p);
  CHECK(canonical["allow"][0]["addresses"] == json::array({"127.0.0.1/32", "10.0.0.0/8"}));
  CHECK(canonical["allow"][1]["ports"] == json::array({443}));
  auto again = parse_policy(canonical);
  REQUIRE(again);
  CHECK(policy_json(*again) == canonical);
  CHECK(secret_names("Bearer ${secret:a} ${secret:b.c}") == std::vector<std::string>{"a", "b.c"});
}

TEST_CASE("IP rules are off unless allowed", "[egress]") {
  const json doc = json::parse(R"({"mode": "allowlist", "allow": [{"cidr": "203.0.113.0/24", "ports": [443]}]})");
  CHECK(error_of(doc) == "network.allow[0].cidr: IP rules are off (the gateway's --egress-ip-rules turns them on)");
  auto p = parse_policy(doc, ParseOptions{true, "network"});
  REQUIRE(p);
  CHECK(find_rule(*p, *parse_authority("203.0.113.9:443", std::nullopt)) == &p->allow[0]);
  CHECK(find_rule(*p, *parse_authority("203.0.114.9:443", std::nullopt)) == nullptr);
  CHECK(error_of(json::parse(R"({"mode": "allowlist", "allow": ["10.0.0.1"]})")).find("is an address") != std::string::npos);
}

TEST_CASE("every error names its field", "[egress]") {
  struct Case {
    const char* doc;
    const char* field;
  };
  for (const auto& c : std::vector<Case>{
           {R"([])", "network: "},
           {R"({"mode": "open"})", "network.mode: "},
           {R"({"allow": ["a.com"]})", "network.allow: "},
           {R"({"mode": "allowlist", "allow": "a.com"})", "network.allow: "},
           {R"({"mode": "allowlist", "allow": [3]})", "network.allow[0]: "},
           {R"({"mode": "allowlist", "allow": ["ok.com", "bad host"]})", "network.allow[1]: "},
           {R"({"mode": "allowlist", "allow": ["a.com:0"]})", "network.allow[0]: "},
           {R"({"mode": "allowlist", "allow": ["*"]})", "network.allow[0]: "},
           {R"({"mode": "allowlist", "allow": [{"host": "a.com", "ports": [70000]}]})", "network.allow[0].ports[0]: "},
           {R"({"mode": "allowlist", "allow": [{"host": "a.com", "ports": []}]})", "network.allow[0].ports: "},
           {R"({"mode": "allowlist", "allow": [{"host": "a.com", "port": 80}]})", "network.allow[0].port: "},
           {R"({"mode": "allowlist", "allow": [{"ports": [80]}]})", "network.allow[0]: "},
           {R"({"mode": "allowlist", "allow": [{"host": "a.com", "addresses": ["10.0.0.1/8"]}]})", "network.allow[0].addresses[0]: "},
           {R"({"mode": "allowlist", "allow": [{"host": "a.com", "headers": {"Host": "x"}}]})", "network.allow[0].headers.Host: "},
           {R"({"mode": "allowlist", "allow": [{"host": "a.com", "headers": {"X": "a\nb"}}]})", "network.allow[0].headers.X: "},
           {R"({"mode": "allowlist", "allow": [{"host": "a.com", "headers": {"X": "${env:HOME}"}}]})", "network.allow[0].headers.X: "},
           {R"({"mode": "allowlist", "allow": [{"host": "a.com", "insecure_http": 1}]})", "network.allow[0].insecure_http: "},
           {R"({"limits": {"bytes_out": "lots"}})", "network.limits.bytes_out: "},
           {R"({"limits": {"rate": 0}})", "network.limits.rate: "},
           {R"({"limits": {"open": -1}})", "network.limits.open: "},
           {R"({"limits": {"speed": 1}})", "network.limits.speed: "},
           {R"({"rules": []})", "network.rules: "},
       }) {
    INFO(c.doc);
    auto msg = error_of(json::parse(c.doc));
    CHECK(msg.rfind(c.field, 0) == 0);
  }
  auto named = parse_policy(json::parse(R"({"mode": 1})"), ParseOptions{false, "metadata.cellgate.network"});
  REQUIRE_FALSE(named);
  CHECK(named.error().message.rfind("metadata.cellgate.network.mode: ", 0) == 0);
}
