// SPDX-License-Identifier: BSD-3-Clause
// quiet_timer tests: it fires once when it expires; disarmed, it neither fires nor wakes the io
// thread at its old deadline (an asio::steady_timer's cancel still wakes it; see quiet_timer.h).
#include "kernel-launcher/quiet_timer.h"

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

using cellgate::launcher::QuietTimer;
using namespace std::chrono_literals;

namespace {

long voluntary_switches() {
  rusage ru{};
  ::getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_nvcsw;
}

}  // namespace

TEST_CASE("an armed quiet timer fires once, after its time") {
  boost::asio::io_context io;
  int fired = 0;
  QuietTimer timer(io, [&] { ++fired; });
  CHECK_FALSE(timer.armed());
  auto t0 = std::chrono::steady_clock::now();
  REQUIRE(timer.arm(5ms));
  CHECK(timer.armed());
  while (fired == 0 && std::chrono::steady_clock::now() - t0 < 2s) io.run_one_for(100ms);
  CHECK(fired == 1);
  CHECK(std::chrono::steady_clock::now() - t0 >= 5ms);
  CHECK_FALSE(timer.armed());
  io.run_for(20ms);
  CHECK(fired == 1);

  SECTION("armed again, it fires again; arming moves the deadline") {
    REQUIRE(timer.arm(1h));
    REQUIRE(timer.arm(2ms));
    io.run_for(30ms);
    CHECK(fired == 2);
  }
}

TEST_CASE("a disarmed quiet timer neither fires nor wakes the io thread") {
  boost::asio::io_context io;
  int fired = 0;
  QuietTimer timer(io, [&] { ++fired; });
  REQUIRE(timer.arm(10ms));
  io.poll();  // the timer's wait is now in the reactor
  timer.disarm();
  CHECK_FALSE(timer.armed());
  long before = voluntary_switches();
  // One sleep in epoll_wait for the whole 60 ms; a wake at the old deadline would be a second.
  CHECK(io.run_for(60ms) == 0);
  CHECK(voluntary_switches() - before <= 1);
  CHECK(fired == 0);

  SECTION("a timer expired but not yet handled fires nothing once disarmed") {
    REQUIRE(timer.arm(1ms));
    ::usleep(5000);  // expired; its handler has not run
    timer.disarm();
    io.run_for(20ms);
    CHECK(fired == 0);
  }
}
