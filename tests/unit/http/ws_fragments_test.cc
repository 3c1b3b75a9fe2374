// SPDX-License-Identifier: BSD-3-Clause
// ws_fragments_test: a message delivered in pieces to a WsConnection reaches a Beast client as one
// fragmented message; nothing interleaves with it; a close before its last piece leaves it unfinished.
#include "gateway/http/ws_connection.h"

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <catch2/catch.hpp>

#include "tests/unit/http/loopback_ws.h"

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using cellgate::http::Outgoing;
using cellgate::http::OutgoingPtr;
using cellgate::protocol::WsFragment;
using Conn = cellgate::http::WsConnection<cellgate::http::PlainStream>;

using cellgate::test::run_until;

struct Endpoint : cellgate::http::WsEndpoint {
  std::shared_ptr<cellgate::http::WsSession> session;
  bool detached = false;
  std::string id = "k";
  void attach(const std::shared_ptr<cellgate::http::WsSession>& s) override { session = s; }
  void detach(cellgate::http::WsSession*, std::vector<OutgoingPtr>) override { detached = true; }
  void from_client(cellgate::http::WsSession&, const std::string&, cellgate::protocol::Message&&) override {}
  const std::string& log_id() const override { return id; }
};

OutgoingPtr piece(WsFragment f, const std::string& bytes) {
  auto data = std::make_unique<char[]>(bytes.size() + 1);
  std::memcpy(data.get(), bytes.data(), bytes.size());
  return std::make_shared<Outgoing>(f, "iopub", std::move(data), bytes.size());
}

// A server WsConnection (v1) and a Beast client on loopback.
struct Link {
  asio::io_context io;
  std::shared_ptr<Endpoint> endpoint = std::make_shared<Endpoint>();
  std::unique_ptr<websocket::stream<beast::tcp_stream>> client;
  bool ended = false;

  Link() {
    auto sockets = cellgate::test::loopback_sockets(io);
    client = std::make_unique<websocket::stream<beast::tcp_stream>>(beast::tcp_stream(std::move(sockets.client)));
    auto server = std::make_shared<beast::tcp_stream>(std::move(sockets.server));
    asio::co_spawn(io, [this, server]() -> asio::awaitable<void> {
      beast::flat_buffer buf;
      cellgate::http::Request req;
      co_await cellgate::http::async_read(*server, buf, req, asio::use_awaitable);
      cellgate::http::WsLimits limits{1 << 24, 1 << 24, 30, nullptr};
      auto conn = std::make_shared<Conn>(Conn::Ws(std::move(*server)), endpoint, "s",
                                         cellgate::protocol::WsProtocol::kV1, limits);
      co_await conn->run(std::move(req));
      ended = true;
    }, asio::detached);
    client->set_option(websocket::stream_base::decorator([](websocket::request_type& r) {
      r.set(beast::http::field::sec_websocket_protocol, "v1.kernel.websocket.jupyter.org");
    }));
    bool shaken = false;
    client->async_handshake("127.0.0.1", "/", [&](beast::error_code ec) { shaken = !ec; });
    run_until(io, [&] { return shaken && endpoint->session; });
  }
  // The client's next message (or the error that ended its read).
  std::pair<beast::error_code, std::string> read() {
    beast::flat_buffer buf;
    std::optional<beast::error_code> got;
    client->async_read(buf, [&](beast::error_code ec, size_t) { got = ec; });
    run_until(io, [&] { return got.has_value(); });
    return {*got, beast::buffers_to_string(buf.data())};
  }
};

}  // namespace

TEST_CASE("pieces of a message reach the client as one message, a whole one after it", "[http][ws]") {
  Link l;
  auto& s = *l.endpoint->session;
  CHECK(s.takes_fragments());
  s.deliver(piece(WsFragment::kFirst, "abc"));
  CHECK(s.mid_message());
  s.deliver(piece(WsFragment::kMiddle, std::string(300000, 'd')));
  s.deliver(piece(WsFragment::kLast, "efg"));
  CHECK_FALSE(s.mid_message());
  s.deliver(piece(WsFragment::kWhole, "next"));
  auto [ec, got] = l.read();
  REQUIRE_FALSE(ec);
  CHECK(got == "abc" + std::string(300000, 'd') + "efg");
  CHECK(l.client->got_binary());
  auto [ec2, next] = l.read();
  REQUIRE_FALSE(ec2);
  CHECK(next == "next");
}

TEST_CASE("a message delivered into another's pieces is refused, and the connection closed with 1011",
          "[http][ws]") {
  Link l;
  auto& s = *l.endpoint->session;
  s.deliver(piece(WsFragment::kFirst, "abc"));
  s.deliver(piece(WsFragment::kWhole, "interleaved"));  // would run into the first
  s.deliver(piece(WsFragment::kLast, "def"));           // closing: not sent
  auto [ec, got] = l.read();
  CHECK(ec == websocket::error::closed);
  CHECK(l.client->reason().code == 1011);
  // The read ends with the close, never with a message (got: the bytes of the unfinished one).
}

TEST_CASE("a close between a message's pieces reaches the client, the message unfinished", "[http][ws]") {
  Link l;
  auto& s = *l.endpoint->session;
  s.deliver(piece(WsFragment::kFirst, std::string(100000, 'a')));
  s.deliver(piece(WsFragment::kMiddle, std::string(100000, 'b')));
  s.close("the kernel is dead: node lost", 1001);
  auto [ec, got] = l.read();
  CHECK(ec == websocket::error::closed);
  CHECK(l.client->reason().code == 1001);
  CHECK(std::string(l.client->reason().reason.data(), l.client->reason().reason.size()) == "the kernel is dead: node lost");
}

TEST_CASE("a continuation with no first piece before it is refused, and the connection closed with 1011",
          "[http][ws]") {
  Link l;
  auto& s = *l.endpoint->session;
  s.deliver(piece(WsFragment::kMiddle, "no first"));
  auto [ec, got] = l.read();
  CHECK(ec == websocket::error::closed);
  CHECK(l.client->reason().code == 1011);
}
