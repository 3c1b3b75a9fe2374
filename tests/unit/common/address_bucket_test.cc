// SPDX-License-Identifier: BSD-3-Clause
// address_bucket_test: the key a per-address budget charges.
#include "common/address_bucket.h"

#include <catch2/catch.hpp>

using cellgate::common::address_bucket;

TEST_CASE("an IPv4 address is its own bucket", "[common][address]") {
  CHECK(address_bucket("127.0.0.1") == "127.0.0.1");
  CHECK(address_bucket("10.1.2.3") != address_bucket("10.1.2.4"));
}

TEST_CASE("IPv6 addresses of one /64 share a bucket, other /64s do not", "[common][address]") {
  CHECK(address_bucket("2001:db8:1:2::1") == "2001:db8:1:2::/64");
  CHECK(address_bucket("2001:db8:1:2:ffff:eeee:dddd:cccc") == "2001:db8:1:2::/64");
  CHECK(address_bucket("2001:DB8:1:2:0:0:0:9") == "2001:db8:1:2::/64");
  CHECK(address_bucket("2001:db8:1:3::1") == "2001:db8:1:3::/64");
  CHECK(address_bucket("::1") == "::/64");
}

TEST_CASE("an IPv4-mapped IPv6 address is its IPv4 address", "[common][address]") {
  CHECK(address_bucket("::ffff:192.0.2.7") == "192.0.2.7");
  CHECK(address_bucket("::ffff:192.0.2.7") != address_bucket("::ffff:192.0.2.8"));
}

TEST_CASE("what is not an address stays as it is", "[common][address]") {
  CHECK(address_bucket("").empty());
  CHECK(address_bucket("localhost") == "localhost");
  CHECK(address_bucket("1.2.3.4.5") == "1.2.3.4.5");
  CHECK(address_bucket(std::string(200, ':')) == std::string(200, ':'));
}
