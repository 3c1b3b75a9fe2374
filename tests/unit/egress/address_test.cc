// SPDX-License-Identifier: BSD-3-Clause
// address: classes of addresses (every special range), IP literals in their one strict form, CIDRs.
#include "egress/address.h"

#include <catch2/catch.hpp>

#include "egress/target.h"

using namespace cellgate::egress;

namespace {
AddressClass cls(const char* text) {
  auto a = parse_ip_literal(text);
  REQUIRE(a);
  return classify(*a);
}
}  // namespace

TEST_CASE("special IPv4 ranges are classified", "[egress]") {
  CHECK(cls("8.8.8.8") == AddressClass::kPublic);
  CHECK(cls("127.0.0.1") == AddressClass::kLoopback);
  CHECK(cls("127.255.1.2") == AddressClass::kLoopback);
  CHECK(cls("10.1.2.3") == AddressClass::kPrivate);
  CHECK(cls("172.16.0.1") == AddressClass::kPrivate);
  CHECK(cls("172.31.255.255") == AddressClass::kPrivate);
  CHECK(cls("172.32.0.1") == AddressClass::kPublic);
  CHECK(cls("192.168.1.1") == AddressClass::kPrivate);
  CHECK(cls("100.64.0.1") == AddressClass::kPrivate);
  CHECK(cls("100.100.100.200") == AddressClass::kPrivate);  // Alibaba's metadata sits in CGNAT space
  CHECK(cls("169.254.169.254") == AddressClass::kMetadata);
  CHECK(cls("169.254.1.1") == AddressClass::kLinkLocal);
  CHECK(cls("0.0.0.0") == AddressClass::kUnspecified);
  CHECK(cls("0.1.2.3") == AddressClass::kUnspecified);
  CHECK(cls("224.0.0.1") == AddressClass::kMulticast);
  CHECK(cls("255.255.255.255") == AddressClass::kMulticast);
  CHECK(cls("240.0.0.1") == AddressClass::kReserved);
  CHECK(cls("192.0.2.1") == AddressClass::kReserved);
  CHECK(cls("198.18.0.1") == AddressClass::kReserved);
}

TEST_CASE("IPv6 ranges, and IPv4 carried inside IPv6, are classified", "[egress]") {
  CHECK(cls("2606:4700::1111") == AddressClass::kPublic);
  CHECK(cls("::1") == AddressClass::kLoopback);
  CHECK(cls("::") == AddressClass::kUnspecified);
  CHECK(cls("fd00:ec2::254") == AddressClass::kMetadata);
  CHECK(cls("fd12::1") == AddressClass::kPrivate);
  CHECK(cls("fe80::1") == AddressClass::kLinkLocal);
  CHECK(cls("ff02::1") == AddressClass::kMulticast);
  CHECK(cls("2001:db8::1") == AddressClass::kReserved);
  // A private address must not launder through a mapping, NAT64 or 6to4.
  CHECK(cls("::ffff:127.0.0.1") == AddressClass::kLoopback);
  CHECK(cls("::ffff:169.254.169.254") == AddressClass::kMetadata);
  CHECK(cls("64:ff9b::a00:1") == AddressClass::kPrivate);      // 10.0.0.1
  CHECK(cls("2002:7f00:1::1") == AddressClass::kLoopback);     // 6to4 of 127.0.0.1
  CHECK(cls("::127.0.0.1") == AddressClass::kReserved);        // IPv4-compatible
}

TEST_CASE("IP literals: only the canonical dotted quad is IPv4", "[egress]") {
  CHECK(parse_ip_literal("1.2.3.4"));
  CHECK(parse_ip_literal("::1"));
  for (const char* odd : {"127.1", "0x7f.0.0.1", "2130706433", "0177.0.0.1", "1.2.3.4.5", "1.2.3.256", "1..2.3", "",
                          "fe80::1%eth0", "1.2.3.4 ", "[::1]"}) {
    INFO(odd);
    CHECK_FALSE(parse_ip_literal(odd));
  }
}

TEST_CASE("CIDR ranges contain what they say and refuse host bits", "[egress]") {
  auto c = parse_cidr("10.0.0.0/8");
  REQUIRE(c);
  CHECK(c->contains(*parse_ip_literal("10.9.8.7")));
  CHECK_FALSE(c->contains(*parse_ip_literal("11.0.0.1")));
  CHECK_FALSE(c->contains(*parse_ip_literal("::ffff:10.0.0.1")));  // families never mix
  CHECK(c->str() == "10.0.0.0/8");
  auto one = parse_cidr("127.0.0.1");
  REQUIRE(one);
  CHECK(one->prefix == 32);
  auto v6 = parse_cidr("fd00::/8");
  REQUIRE(v6);
  CHECK(v6->contains(*parse_ip_literal("fd12:3456::1")));
  CHECK_FALSE(v6->contains(*parse_ip_literal("fe80::1")));
  CHECK(parse_cidr("0.0.0.0/0"));
  CHECK_FALSE(parse_cidr("10.0.0.1/8"));
  CHECK_FALSE(parse_cidr("10.0.0.0/33"));
  CHECK_FALSE(parse_cidr("::/129"));
  CHECK_FALSE(parse_cidr("10.0.0.0/"));
  CHECK_FALSE(parse_cidr("example.com/8"));
}

TEST_CASE("host names are canonical or refused", "[egress]") {
  CHECK(canonical_host_name("PyPI.org.") == "pypi.org");
  CHECK(canonical_host_name("files.pythonhosted.org") == "files.pythonhosted.org");
  CHECK(canonical_host_name("_srv.example.com") == "_srv.example.com");
  for (const char* bad : {"", ".", "a..b", "-a.com", "a-.com", "exa mple.com", "ex\xc3\xa4mple.com", "127.1", "0x7f.1",
                          "2130706433", "host:80", "a/b"}) {
    INFO(bad);
    CHECK_FALSE(canonical_host_name(bad));
  }
  CHECK_FALSE(canonical_host_name(std::string(64, 'a') + ".com"));
}

TEST_CASE("authorities parse with and without a default port", "[egress]") {
  auto t = parse_authority("Example.COM:8443", std::nullopt);
  REQUIRE(t);
  CHECK(t->host == "example.com");
  CHECK(t->port == 8443);
  CHECK_FALSE(t->ip);
  auto v6 = parse_authority("[::1]:443", std::nullopt);
  REQUIRE(v6);
  CHECK(v6->ip);
  CHECK(v6->authority() == "[::1]:443");
  auto d = parse_authority("example.com", 80);
  REQUIRE(d);
  CHECK(d->port == 80);
  for (const char* bad : {"example.com", "example.com:", "example.com:0", "example.com:65536", "::1:443", "[::1",
                          "[1.2.3.4]:80", "user@example.com:80", "127.1:80"}) {
    INFO(bad);
    CHECK_FALSE(parse_authority(bad, std::nullopt));
  }
}

TEST_CASE("wildcards match subdomains only", "[egress]") {
  CHECK(host_matches("*.example.com", "a.example.com"));
  CHECK(host_matches("*.example.com", "a.b.example.com"));
  CHECK_FALSE(host_matches("*.example.com", "example.com"));
  CHECK_FALSE(host_matches("*.example.com", "badexample.com"));
  CHECK(host_matches("example.com", "example.com"));
  CHECK_FALSE(host_matches("example.com", "a.example.com"));
}
