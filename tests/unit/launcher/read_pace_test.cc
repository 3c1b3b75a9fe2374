// SPDX-License-Identifier: BSD-3-Clause
// read_pace tests: the token bucket behind --kernel-output-rate, on explicit clock readings.
#include "kernel-launcher/read_pace.h"

#include <chrono>

#include <catch2/catch.hpp>

using cellgate::launcher::ReadPace;
using namespace std::chrono_literals;

TEST_CASE("read_pace: a burst of one second's worth, then the rate") {
  ReadPace pace(1000);  // 1000 bytes a second
  const auto t0 = ReadPace::Clock::time_point{} + 100s;
  CHECK(pace.charge(600, t0) == 0us);
  CHECK(pace.charge(400, t0) == 0us);           // the burst is spent
  CHECK(pace.charge(100, t0) == 100000us);      // 100 bytes over: a tenth of a second
  CHECK(pace.charge(0, t0 + 100ms) == 0us);     // the debt is paid
  CHECK(pace.charge(50, t0 + 150ms) == 0us);    // 50 bytes earned since
  CHECK(pace.charge(1, t0 + 150ms) == 1000us);
}

TEST_CASE("read_pace: a read larger than the burst goes through and is paid for after") {
  ReadPace pace(1000);
  const auto t0 = ReadPace::Clock::time_point{} + 100s;
  CHECK(pace.charge(5000, t0) == 4000000us);
  // Idle time refills at most one second's worth.
  CHECK(pace.charge(1000, t0 + 60s) == 0us);
  CHECK(pace.charge(1, t0 + 60s) == 1000us);
}

TEST_CASE("read_pace: rate 0 never pauses") {
  ReadPace pace;
  CHECK(pace.charge(uint64_t{1} << 40, ReadPace::Clock::now()) == 0us);
}
