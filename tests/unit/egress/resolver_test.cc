// SPDX-License-Identifier: BSD-3-Clause
// resolver: the hosts file format, and resolution through it without DNS.
#include "egress/resolver.h"

#include <catch2/catch.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

using namespace cellgate::egress;

TEST_CASE("hosts files parse like /etc/hosts and errors name the line", "[egress]") {
  auto t = parse_hosts("# test names\n127.0.0.1 Pypi.Test mirror.test  # two names\n\n::1 v6.test\n"
                       "::ffff:10.0.0.1 mapped.test\n127.0.0.2 pypi.test\n", "hosts");
  REQUIRE(t);
  CHECK(t->at("pypi.test").size() == 2);
  CHECK(t->at("v6.test").at(0).is_v6());
  CHECK(t->at("mapped.test").at(0).is_v4());  // mapped answers are IPv4 (one class, one check)
  auto bad = parse_hosts("127.0.0.1 ok.test\nlocalhost 127.0.0.1\n", "f");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message == "f:2: 'localhost' is not an IP address");
  CHECK_FALSE(parse_hosts("10.0.0.1\n", "f"));
  CHECK_FALSE(parse_hosts("10.0.0.1 bad_name!\n", "f"));
}

TEST_CASE("without DNS only the hosts file answers", "[egress]") {
  boost::asio::io_context io;
  Resolver::Options o;
  o.hosts = parse_hosts("127.0.0.1 a.test\n", "h").value();
  o.system = false;
  Resolver r(io.get_executor(), o);
  auto known = boost::asio::co_spawn(io, r.resolve("a.test"), boost::asio::use_future);
  auto unknown = boost::asio::co_spawn(io, r.resolve("b.test"), boost::asio::use_future);
  io.run();
  auto k = known.get();
  CHECK(k.addresses.size() == 1);
  auto u = unknown.get();
  CHECK(u.addresses.empty());
  CHECK(u.error == "b.test is not a known host name");
}
