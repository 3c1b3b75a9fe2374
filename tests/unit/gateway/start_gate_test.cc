// SPDX-License-Identifier: BSD-3-Clause
// StartGate: the bounds on starts in flight (all users, per user), the queue's order and bounds, its
// wait's deadline, closing, and a slot that outlives the gate.
#include <optional>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include "gateway/start_gate.h"

using namespace cellgate;
using namespace std::chrono_literals;
using gateway::StartGate;

namespace {

// One enter() run as its own coroutine, as concurrent requests do; its outcome kept.
struct Entry {
  std::optional<common::Result<StartGate::Slot>> result;
  bool done() const { return result.has_value(); }
  bool admitted() const { return result && result->has_value(); }
  std::string error() const { return result && !result->has_value() ? result->error().message : ""; }
  std::optional<common::Errc> code() const {
    if (!result || result->has_value()) return std::nullopt;
    return result->error().code;
  }
  void leave() { result.reset(); }
};

void enter(boost::asio::io_context& io, StartGate& gate, const std::string& user, Entry& e) {
  boost::asio::co_spawn(
      io,
      [&gate, user, &e]() -> boost::asio::awaitable<void> {
        auto r = co_await gate.enter(user);
        e.result.emplace(std::move(r));
      },
      [](std::exception_ptr p) {
        if (p) std::rethrow_exception(p);
      });
}

void settle(boost::asio::io_context& io) {
  io.restart();
  io.poll();
}

gateway::StartLimits limits(int in_flight, int per_user, int queue, int queue_per_user,
                            std::chrono::milliseconds wait = 60s) {
  return gateway::StartLimits{in_flight, per_user, queue, queue_per_user, wait};
}

}  // namespace

TEST_CASE("start gate: starts past the bounds wait their turn, or are refused naming the bound", "[start_gate]") {
  boost::asio::io_context io;
  StartGate gate(io, limits(2, 1, 2, 1));
  Entry a1, a2, b1, c1, d1, a3;
  enter(io, gate, "alice", a1);
  enter(io, gate, "alice", a2);  // alice's bound: waits
  enter(io, gate, "bob", b1);
  enter(io, gate, "carol", c1);  // the gateway's bound: waits
  settle(io);
  CHECK(a1.admitted());
  CHECK(!a2.done());
  CHECK(b1.admitted());
  CHECK(!c1.done());
  CHECK(gate.status()["in_flight"] == 2);
  CHECK(gate.status()["queued"] == 2);
  enter(io, gate, "alice", a3);  // alice already has one waiting
  enter(io, gate, "dave", d1);   // two are waiting
  settle(io);
  CHECK(a3.error().find("start_queue_per_user 1") != std::string::npos);
  CHECK(a3.code() == common::Errc::kTooManyRequests);  // her own bound: 429
  CHECK(d1.error().find("start_queue 2") != std::string::npos);
  CHECK(d1.code() == common::Errc::kUnavailable);  // the gateway's: 503
  // bob's slot frees one: alice (first in line) is still at her own bound, so carol goes ahead of her.
  b1.leave();
  settle(io);
  CHECK(c1.admitted());
  CHECK(!a2.done());
  a1.leave();
  settle(io);
  CHECK(a2.admitted());
  CHECK(gate.status()["queued"] == 0);
  a2.leave();
  c1.leave();
  settle(io);
  CHECK(gate.status()["in_flight"] == 0);
}

TEST_CASE("start gate: a wait that runs out, and a closed gate, refuse with 503", "[start_gate]") {
  boost::asio::io_context io;
  StartGate gate(io, limits(1, 0, 8, 8, 50ms));
  Entry first, late, closed;
  enter(io, gate, "alice", first);
  enter(io, gate, "bob", late);
  settle(io);
  REQUIRE(first.admitted());
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (!late.done() && std::chrono::steady_clock::now() < until) {
    io.restart();
    io.run_one_for(10ms);
  }
  CHECK(late.error().find("waited 0 s for its turn (max_starting 1") != std::string::npos);
  CHECK(late.code() == common::Errc::kUnavailable);
  CHECK(gate.status()["queued"] == 0);
  enter(io, gate, "carol", closed);
  settle(io);
  CHECK(!closed.done());
  gate.close();
  settle(io);
  CHECK(closed.error() == "the gateway is stopping");
  CHECK(first.admitted());
}

TEST_CASE("start gate: a wait that only the user's own starts held runs out with 429", "[start_gate]") {
  boost::asio::io_context io;
  StartGate gate(io, limits(4, 1, 8, 8, 50ms));
  Entry first, second;
  enter(io, gate, "alice", first);
  enter(io, gate, "alice", second);
  settle(io);
  REQUIRE(first.admitted());
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (!second.done() && std::chrono::steady_clock::now() < until) {
    io.restart();
    io.run_one_for(10ms);
  }
  CHECK(second.code() == common::Errc::kTooManyRequests);
  CHECK(second.error().find("behind 1 of user alice's (max_starting_per_user 1)") != std::string::npos);
}

TEST_CASE("start gate: no bound (0) lets every start through; a slot may outlive its gate", "[start_gate]") {
  boost::asio::io_context io;
  std::vector<Entry> entries(50);
  {
    StartGate gate(io, limits(0, 0, 0, 0));
    for (auto& e : entries) enter(io, gate, "alice", e);
    settle(io);
    for (auto& e : entries) CHECK(e.admitted());
    CHECK(gate.status()["in_flight"] == 50);
  }
  entries.clear();  // the slots' gate is gone: giving them back does nothing
}
