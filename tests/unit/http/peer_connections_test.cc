// SPDX-License-Identifier: BSD-3-Clause
// peer_connections tests: the bound and the expiry of idle connections (IdleSet, without sockets), and
// the rules of reuse: a peer's close seen by a peek, what may be sent again, which responses end a connection.
#include "gateway/http/peer_connections.h"

#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <string_view>

#include <boost/asio/ssl/error.hpp>
#include <catch2/catch.hpp>

#include "gateway/http/idle_set.h"

namespace cellgate::http {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

const Clock::time_point t0 = Clock::time_point{} + 1000s;

TEST_CASE("at most 16 idle connections per node: the 17th puts the oldest out", "[http]") {
  IdleSet<int> set(kMaxIdlePerNode, kMaxIdle);
  CHECK(kMaxIdlePerNode == 16);
  for (int i = 0; i < 16; ++i) CHECK_FALSE(set.put("a:9443", i, t0 + std::chrono::milliseconds(i)).has_value());
  auto out = set.put("a:9443", 16, t0 + 16ms);
  REQUIRE(out.has_value());
  CHECK(*out == 0);  // the oldest
  CHECK(set.size("a:9443") == 16);
  // Another node has a bound of its own.
  CHECK_FALSE(set.put("b:9443", 100, t0).has_value());
  CHECK(set.size() == 17);
  IdleSet<int> none(0, kMaxIdle);
  CHECK(none.put("a:9443", 7, t0) == std::optional<int>(7));
  CHECK(none.size() == 0);
}

TEST_CASE("the most recently used idle connection is taken first, and only its node's", "[http]") {
  IdleSet<int> set(kMaxIdlePerNode, kMaxIdle);
  set.put("a:9443", 1, t0);
  set.put("a:9443", 2, t0 + 1s);
  set.put("b:9443", 3, t0 + 2s);
  CHECK(set.take("a:9443", t0 + 3s) == std::optional<int>(2));
  CHECK(set.take("a:9443", t0 + 3s) == std::optional<int>(1));
  CHECK_FALSE(set.take("a:9443", t0 + 3s).has_value());
  CHECK_FALSE(set.take("c:9443", t0 + 3s).has_value());
  CHECK(set.size() == 1);
}

TEST_CASE("no connection is kept idle 20 s or longer", "[http]") {
  IdleSet<int> set(kMaxIdlePerNode, kMaxIdle);
  CHECK(kMaxIdle == 20s);
  CHECK_FALSE(set.next_expiry().has_value());
  set.put("a:9443", 1, t0);
  set.put("b:9443", 2, t0 + 5s);
  set.put("a:9443", 3, t0 + 10s);
  CHECK(set.next_expiry() == t0 + 20s);
  // Not taken once it has reached the bound, even before the sweep removes it.
  CHECK_FALSE(set.take("b:9443", t0 + 25s).has_value());
  CHECK(set.expire(t0 + 19999ms).empty());
  auto gone = set.expire(t0 + 20s);
  CHECK(gone == std::vector<int>{1});
  CHECK(set.next_expiry() == t0 + 25s);
  gone = set.expire(t0 + 30s);
  CHECK(gone.size() == 2);
  CHECK(set.size() == 0);
  CHECK_FALSE(set.next_expiry().has_value());
  set.put("a:9443", 4, t0 + 31s);
  CHECK(set.clear() == std::vector<int>{4});
  CHECK(set.size() == 0);
}

TEST_CASE("a kept connection the peer closed, or that has bytes nobody asked for, is not reused", "[http]") {
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  CHECK(still_open(fds[0]));  // nothing to read: EAGAIN
  REQUIRE(::write(fds[1], "x", 1) == 1);
  CHECK_FALSE(still_open(fds[0]));  // data between requests: a protocol error
  char byte;
  REQUIRE(::read(fds[0], &byte, 1) == 1);
  CHECK(still_open(fds[0]));
  ::close(fds[1]);
  CHECK_FALSE(still_open(fds[0]));  // 0: the peer closed it
  ::close(fds[0]);
}

TEST_CASE("only a request not sent whole, or an idempotent one, goes again on a new connection", "[http]") {
  for (verb v : {verb::get, verb::head, verb::options, verb::trace, verb::put, verb::delete_}) {
    CHECK(idempotent(v));
    CHECK(may_retry(v, true));
  }
  for (verb v : {verb::post, verb::patch, verb::connect}) {
    CHECK_FALSE(idempotent(v));
    CHECK_FALSE(may_retry(v, true));  // sent whole: the node may have acted on it
    CHECK(may_retry(v, false));       // not sent whole: it cannot have been
  }
  CHECK(closed_by_peer(boost::asio::error::eof));
  CHECK(closed_by_peer(boost::asio::error::connection_reset));
  CHECK(closed_by_peer(boost::asio::error::broken_pipe));
  CHECK(closed_by_peer(error::end_of_stream));
  CHECK(closed_by_peer(boost::asio::ssl::error::stream_truncated));
  CHECK_FALSE(closed_by_peer(boost::asio::error::timed_out));  // a node cut off: not sent again
  CHECK_FALSE(closed_by_peer(boost::beast::error::timeout));
}

// Feeds bytes to a response parser as a read would; eof: the peer then closed the connection.
bool reusable_after(std::string_view bytes, bool eof = false) {
  response_parser<string_body> parser;
  parser.eager(true);
  boost::system::error_code ec;
  size_t used = 0;
  while (used < bytes.size() && !parser.is_done()) {
    size_t n = parser.put(boost::asio::buffer(bytes.data() + used, bytes.size() - used), ec);
    used += n;
    if (ec == error::need_more) break;
    REQUIRE_FALSE(ec);
  }
  if (eof) {
    parser.put_eof(ec);
    REQUIRE_FALSE(ec);
  }
  return reusable(parser, bytes.size() - used);
}

TEST_CASE("the peer's Connection: close and HTTP/1.0 end a kept connection, as does a body not read whole", "[http]") {
  CHECK(reusable_after("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"));
  CHECK(reusable_after("HTTP/1.1 204 No Content\r\n\r\n"));
  CHECK(reusable_after("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"));
  CHECK_FALSE(reusable_after("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"));
  CHECK_FALSE(reusable_after("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"));
  CHECK(reusable_after("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok"));
  // A body that ends with the connection.
  CHECK_FALSE(reusable_after("HTTP/1.1 200 OK\r\n\r\nok", true));
  // Not read whole: 2 of 10 bytes.
  CHECK_FALSE(reusable_after("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nok"));
  // Bytes past the response: the peer is out of step with us.
  CHECK_FALSE(reusable_after("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n"));
}

}  // namespace
}  // namespace cellgate::http
