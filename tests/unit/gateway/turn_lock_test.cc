// SPDX-License-Identifier: BSD-3-Clause
// turn_lock_test: coroutines that suspend inside their turn never interleave, and get their turns in
// the order they asked.
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <catch2/catch.hpp>

#include "gateway/turn_lock.h"

using namespace cellgate::gateway;
namespace asio = boost::asio;

namespace {

asio::awaitable<void> yield_a_few(int n) {
  auto ex = co_await asio::this_coro::executor;
  for (int i = 0; i < n; ++i) co_await asio::post(ex, asio::use_awaitable);
}

asio::awaitable<void> section(TurnLock& lock, std::string name, int pauses, std::vector<std::string>& log) {
  auto turn = co_await lock.acquire();
  log.push_back(name + " in");
  co_await yield_a_few(pauses);
  log.push_back(name + " out");
}

}  // namespace

TEST_CASE("turns do not interleave across suspensions and come in the order asked", "[turn_lock]") {
  asio::io_context io;
  TurnLock lock;
  std::vector<std::string> log;
  // a suspends longest; b and c ask while a holds the turn.
  asio::co_spawn(io, section(lock, "a", 5, log), asio::detached);
  asio::co_spawn(io, section(lock, "b", 1, log), asio::detached);
  asio::co_spawn(io, section(lock, "c", 0, log), asio::detached);
  io.run();
  CHECK(log == std::vector<std::string>{"a in", "a out", "b in", "b out", "c in", "c out"});
  CHECK_FALSE(lock.held());
  // Free again: a new turn is taken at once.
  asio::co_spawn(io, section(lock, "d", 0, log), asio::detached);
  io.restart();
  io.run();
  CHECK(log.back() == "d out");
  CHECK_FALSE(lock.held());
}
