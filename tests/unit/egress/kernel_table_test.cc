// SPDX-License-Identifier: BSD-3-Clause
// kernel_table: limits with defaults, the token bucket, byte caps, the audit ring, cuts on change.
#include "egress/kernel_table.h"

#include <catch2/catch.hpp>

using namespace cellgate::egress;
using namespace std::chrono_literals;

TEST_CASE("a policy's limits override the defaults field by field", "[egress]") {
  Limits l;
  l.open = 3;
  l.rate = 1.5;
  EffectiveLimits d;
  auto e = effective_limits(l, d);
  CHECK(e.open == 3);
  CHECK(e.rate == Approx(1.5));
  CHECK(e.bytes_out == d.bytes_out);
}

TEST_CASE("the token bucket gives a burst, then one token per 1/rate", "[egress]") {
  TokenBucket b(2, 3);
  auto t = std::chrono::steady_clock::now();
  CHECK(b.take(t).count() == 0);
  CHECK(b.take(t).count() == 0);
  CHECK(b.take(t).count() == 0);
  auto wait = b.take(t);
  CHECK(wait > 400ms);
  CHECK(wait <= 500ms);
  CHECK(b.take(t + 500ms).count() == 0);
  CHECK(b.take(t + 500ms) > 0ms);
  CHECK(b.take(t + 10s).count() == 0);  // saved up, but never more than the burst
  CHECK(b.take(t + 10s).count() == 0);
  CHECK(b.take(t + 10s).count() == 0);
  CHECK(b.take(t + 10s) > 0ms);
}

TEST_CASE("byte caps, recent lines and cuts", "[egress]") {
  KernelTable table(2);
  EffectiveLimits l;
  l.bytes_out = 100;
  auto k = table.set("k1", "alice", Policy{}, l);
  REQUIRE(k);
  CHECK((*k)->charge_out(60));
  CHECK_FALSE((*k)->over_bytes());
  CHECK_FALSE((*k)->charge_out(60));  // would pass the cap: refused, not counted, the cap spent
  CHECK((*k)->over_bytes());
  CHECK((*k)->counters.bytes_out == 60);
  CHECK_FALSE((*k)->charge_out(1));
  for (int i = 0; i < 300; ++i) (*k)->remember({{"n", i}});
  auto stats = (*k)->stats(2);
  CHECK(stats["recent"].size() == 2);
  CHECK(stats["recent"][1]["n"] == 299);
  CHECK(stats["counters"]["bytes_out"] == 60);
  int cuts = 0;
  (*k)->on_cut([&] { ++cuts; });
  auto again = table.set("k1", "alice", Policy{}, l);  // a new policy cuts what the old one allowed
  REQUIRE(again);
  CHECK(cuts == 1);
  CHECK((*again)->counters.bytes_out == 60);  // counters survive a replacement
  CHECK(table.set("k2", "bob", Policy{}, l));
  CHECK_FALSE(table.set("k3", "eve", Policy{}, l));  // the table is bounded
  CHECK(table.remove("k2"));
  CHECK_FALSE(table.remove("k2"));
  CHECK(table.find("k2") == nullptr);
}
