// SPDX-License-Identifier: BSD-3-Clause
// ExecuteClock: a limited execute is timed from when the shell is free by the gateway's count (or its
// busy), and ends on both its reply and its idle (or an aborted reply alone); what a kernel forges or
// withholds lets no cell escape its limit.
#include <catch2/catch.hpp>

#include "gateway/execute_clock.h"

using cellgate::gateway::ExecuteClock;
using Ids = std::vector<std::string>;

TEST_CASE("a limited execute sent to a free shell is timed at once, and ends on its reply and idle") {
  ExecuteClock c;
  REQUIRE(c.sent("a", true));
  CHECK(c.take_started() == Ids{"a"});
  c.busy("a");
  CHECK(c.take_started().empty());
  c.replied("a");
  CHECK(c.take_ended().empty());  // a reply alone (a cell can forge it) ends nothing
  c.idle("a");
  CHECK(c.take_ended() == Ids{"a"});
  CHECK(c.empty());
}

TEST_CASE("an aborted reply ends an execute without an idle, and the next one's clock starts") {
  // IRkernel aborts what was queued behind an interrupted cell with the reply alone (abort_shell_msg).
  ExecuteClock c;
  REQUIRE(c.sent("a", true));
  REQUIRE(c.sent("b", true));
  CHECK(c.take_started() == Ids{"a"});
  c.replied("a");
  CHECK(c.take_ended().empty());
  c.idle("a");
  CHECK(c.take_ended() == Ids{"a"});
  CHECK(c.take_started() == Ids{"b"});
  c.replied("b", /*aborted=*/true);
  CHECK(c.take_ended() == Ids{"b"});
  CHECK(c.empty());
}

TEST_CASE("a later execute's busy ends the replied ones ahead of it whose idle was lost") {
  ExecuteClock c;
  REQUIRE(c.sent("a", true));
  REQUIRE(c.sent("b", true));
  REQUIRE(c.sent("c", true));
  CHECK(c.take_started() == Ids{"a"});
  c.replied("a");  // its idle dropped by the PUB socket
  c.busy("c");     // b has not replied: it is still the kernel's, and stays
  CHECK(c.take_ended() == Ids{"a"});
  CHECK(c.take_started() == Ids{"c", "b"});
  CHECK(c.size() == 2);
}

TEST_CASE("aborted executes do not fill the table") {
  ExecuteClock c;
  for (size_t i = 0; i < 2 * ExecuteClock::kMaxTracked; ++i) {
    REQUIRE(c.sent("q" + std::to_string(i), true));
    c.replied("q" + std::to_string(i), /*aborted=*/true);
  }
  CHECK(c.empty());
}

TEST_CASE("the next execute's clock starts when the one ahead ends, even if its busy never comes") {
  ExecuteClock c;
  REQUIRE(c.sent("a", true));
  REQUIRE(c.sent("b", true));
  CHECK(c.take_started() == Ids{"a"});
  c.idle("a");
  c.replied("a");
  CHECK(c.take_ended() == Ids{"a"});
  CHECK(c.take_started() == Ids{"b"});
}

TEST_CASE("an execute behind the gateway's own is timed from its busy, or when the own one ends") {
  ExecuteClock c;
  REQUIRE(c.sent("own", false));
  REQUIRE(c.sent("a", true));
  CHECK(c.take_started().empty());
  SECTION("busy") {
    c.busy("a");
    CHECK(c.take_started() == Ids{"a"});
    c.replied("own");
    c.idle("own");
    CHECK(c.take_started().empty());  // once
    CHECK(c.take_ended().empty());    // the own one is not limited
  }
  SECTION("the gateway gives up on its own") {
    c.forget("own");
    CHECK(c.take_started() == Ids{"a"});
  }
}

TEST_CASE("a limited execute that ends before its clock is taken is not armed") {
  ExecuteClock c;
  REQUIRE(c.sent("own", false));
  REQUIRE(c.sent("a", true));
  c.busy("a");
  c.replied("a");
  c.idle("a");
  CHECK(c.take_started().empty());
  CHECK(c.take_ended() == Ids{"a"});
}

TEST_CASE("messages about untracked ids change nothing, and a msg_id in the table or a full table is refused") {
  ExecuteClock c;
  c.busy("x");
  c.replied("x");
  c.idle("x");
  c.forget("x");
  CHECK(c.empty());
  REQUIRE(c.sent("a", true));
  CHECK_FALSE(c.sent("a", true));
  CHECK_FALSE(c.sent("", true));
  for (size_t i = 1; i < ExecuteClock::kMaxTracked; ++i) REQUIRE(c.sent("m" + std::to_string(i), true));
  CHECK_FALSE(c.sent("one-more", true));
  c.clear();
  CHECK(c.empty());
  CHECK(c.take_started().empty());
  CHECK(c.sent("one-more", true));
}
