// SPDX-License-Identifier: BSD-3-Clause
// rate_limiter_test: blocking after repeated failures, windows and LRU bounds, on a fake clock.
#include "state/rate_limiter.h"

#include <catch2/catch.hpp>

using cellgate::state::AuthRateLimiter;
using namespace std::chrono_literals;

namespace {

struct FakeClock {
  std::chrono::steady_clock::time_point now{std::chrono::hours(1000)};
  AuthRateLimiter::Clock fn() {
    return [this] { return now; };
  }
};

AuthRateLimiter::Options opts(int max_failures, size_t max_ips = 100) {
  AuthRateLimiter::Options o;
  o.max_failures = max_failures;
  o.window = 60s;
  o.block_for = 30s;
  o.max_ips = max_ips;
  return o;
}

}  // namespace

TEST_CASE("the Nth failure within the window blocks the IP for block_for", "[state]") {
  FakeClock clock;
  AuthRateLimiter limiter(opts(3), clock.fn());
  CHECK(limiter.retry_after("10.0.0.1") == 0);
  CHECK_FALSE(limiter.record_failure("10.0.0.1"));
  clock.now += 10s;
  CHECK_FALSE(limiter.record_failure("10.0.0.1"));
  CHECK(limiter.retry_after("10.0.0.1") == 0);
  CHECK(limiter.record_failure("10.0.0.1"));  // third within 60 s
  CHECK(limiter.retry_after("10.0.0.1") == 30);
  CHECK(limiter.retry_after("10.0.0.2") == 0);  // others unaffected

  clock.now += 29s + 500ms;
  CHECK(limiter.retry_after("10.0.0.1") == 1);  // rounded up, never 0 while blocked
  CHECK_FALSE(limiter.record_failure("10.0.0.1"));  // failures while blocked do not extend it
  clock.now += 500ms;
  CHECK(limiter.retry_after("10.0.0.1") == 0);
  // After a block the count starts again from zero.
  CHECK_FALSE(limiter.record_failure("10.0.0.1"));
  CHECK(limiter.retry_after("10.0.0.1") == 0);
}

TEST_CASE("failures older than the window are forgotten", "[state]") {
  FakeClock clock;
  AuthRateLimiter limiter(opts(3), clock.fn());
  for (int i = 0; i < 10; ++i) {
    CHECK_FALSE(limiter.record_failure("192.0.2.7"));
    clock.now += 31s;  // never three within 60 s
  }
  CHECK(limiter.retry_after("192.0.2.7") == 0);
  CHECK_FALSE(limiter.record_failure("192.0.2.7"));
  clock.now += 1s;
  CHECK(limiter.record_failure("192.0.2.7"));
}

TEST_CASE("memory is bounded: the least recently seen IP is forgotten", "[state]") {
  FakeClock clock;
  AuthRateLimiter limiter(opts(2, 3), clock.fn());
  CHECK_FALSE(limiter.record_failure("a"));
  CHECK(limiter.record_failure("a"));  // a is blocked; LRU: a
  CHECK_FALSE(limiter.record_failure("b"));  // b, a
  CHECK_FALSE(limiter.record_failure("c"));  // c, b, a
  CHECK(limiter.tracked() == 3);
  CHECK_FALSE(limiter.record_failure("a"));  // still blocked; a, c, b
  CHECK_FALSE(limiter.record_failure("d"));  // evicts b: d, a, c
  CHECK(limiter.tracked() == 3);
  CHECK(limiter.retry_after("a") > 0);  // a survived: recently seen
  // b was forgotten, so its second failure counts as a first (remembered, it would block).
  CHECK_FALSE(limiter.record_failure("b"));
  CHECK(limiter.record_failure("b"));
  for (int i = 0; i < 1000; ++i) limiter.record_failure("flood-" + std::to_string(i));
  CHECK(limiter.tracked() == 3);
}
