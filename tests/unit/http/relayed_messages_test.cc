// SPDX-License-Identifier: BSD-3-Clause
// relayed_messages_test: another node's messages read for a client over real loopback TCP between two
// Beast WebSockets: a large one-frame message in pieces (checked first, bytes unchanged, one piece held
// at a time), the rest whole, a malformed head refused before any piece, the size cap, and a message cut off.
#include "gateway/http/relayed_messages.h"

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
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket.hpp>
#include <catch2/catch.hpp>

#include "tests/unit/http/loopback_ws.h"

#include "protocol/v1_frame.h"
#include "protocol/ws_codec.h"
#include "protocol/ws_frame.h"

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using Ws = websocket::stream<beast::tcp_stream>;
using cellgate::http::OutgoingPtr;
using cellgate::protocol::WsFragment;
using Reader = cellgate::http::RelayedMessages<Ws>;
constexpr size_t kPiece = Reader::kPiece;

using cellgate::test::run_until;

struct Pair {
  asio::io_context io;
  std::unique_ptr<Ws> writer, reader;

  Pair() {
    auto sockets = cellgate::test::loopback_sockets(io);
    writer = std::make_unique<Ws>(beast::tcp_stream(std::move(sockets.server)));
    reader = std::make_unique<Ws>(beast::tcp_stream(std::move(sockets.client)));
    cellgate::test::handshake(io, *writer, *reader);
    writer->binary(true);
    writer->auto_fragment(false);  // a node writes a message as one frame (ws_connection.cc)
  }
  // Writes bytes to the socket under the writer `chunk` at a time (a frame made by hand).
  void send_raw(std::string bytes, size_t chunk, bool then_close = false) {
    auto data = std::make_shared<std::string>(std::move(bytes));
    auto at = std::make_shared<size_t>(0);
    auto next = std::make_shared<std::function<void()>>();
    *next = [this, data, at, chunk, then_close, next] {
      if (*at == data->size()) {
        if (then_close) writer->next_layer().socket().close();
        *next = nullptr;
        return;
      }
      const size_t n = std::min(chunk, data->size() - *at);
      asio::async_write(writer->next_layer(), asio::buffer(data->data() + *at, n),
                        [this, at, n, next](beast::error_code ec, size_t) {
                          if (ec || !*next) return;
                          *at += n;
                          (*next)();
                        });
    };
    (*next)();
  }
  // One next() of reader; runs the io until it completes.
  cellgate::common::Result<OutgoingPtr> next(Reader& r, bool pieces, beast::error_code& ec) {
    std::optional<cellgate::common::Result<OutgoingPtr>> got;
    asio::co_spawn(io, [&]() -> asio::awaitable<void> { got = co_await r.next(pieces, ec); }, asio::detached);
    run_until(io, [&] { return got.has_value(); });
    return std::move(*got);
  }
};

std::string pattern(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 31 + static_cast<size_t>(seed)) & 0xff);
  return s;
}

std::string v1(const std::string& channel, std::string header, size_t content_bytes) {
  cellgate::protocol::Message m;
  m.header = std::move(header);
  m.parent_header = "{}";
  m.metadata = "{}";
  m.content = pattern(content_bytes, 3);  // a node's kernel's: passed on as it is
  m.buffers = {pattern(1000, 4)};
  return cellgate::protocol::encode_ws(cellgate::protocol::WsProtocol::kV1, channel, m).data;
}

const std::string kHeader = R"({"msg_id": "m1", "msg_type": "stream", "session": "s"})";

std::string bytes_of(const OutgoingPtr& m) {
  std::string out;
  for (const auto& b : m->frame_buffers(cellgate::protocol::WsProtocol::kV1))
    out.append(static_cast<const char*>(b.data()), b.size());
  return out;
}

std::string framed(const std::string& payload) {
  return std::string(cellgate::protocol::WsFrameHeader(true, payload.size()).view()) + payload;
}

}  // namespace

TEST_CASE("a large one-frame message comes in pieces, its head checked first, its bytes unchanged",
          "[http][relay]") {
  Pair p;
  Reader r(*p.reader);
  const std::string message = v1("iopub", kHeader, 3 * 1024 * 1024 + 7);
  // The whole message is written at once; the reader takes its pieces slowly (the io runs between them,
  // so the writer fills what TCP holds): each piece is one of at most kPiece bytes, however long the message.
  bool written = false;
  p.writer->async_write(asio::buffer(message), [&](beast::error_code ec, size_t) { written = !ec; });
  std::string got;
  std::vector<WsFragment> kinds;
  beast::error_code ec;
  do {
    for (int i = 0; i < 50; ++i) p.io.poll();
    auto piece = p.next(r, true, ec);
    REQUIRE_FALSE(ec);
    REQUIRE(piece);
    kinds.push_back(piece.value()->fragment());
    CHECK(piece.value()->channel() == "iopub");
    CHECK(piece.value()->bytes() <= kPiece + 64);
    got += bytes_of(piece.value());
  } while (kinds.back() != WsFragment::kLast);
  run_until(p.io, [&] { return written; });
  CHECK(got == message);
  CHECK(kinds.front() == WsFragment::kFirst);
  CHECK(kinds.size() >= message.size() / kPiece + 1);
  for (size_t i = 1; i + 1 < kinds.size(); ++i) CHECK(kinds[i] == WsFragment::kMiddle);
  CHECK_FALSE(r.mid_message());
  // The next message, a small one, comes whole.
  const std::string small = v1("iopub", kHeader, 100);
  p.writer->async_write(asio::buffer(small), [](beast::error_code, size_t) {});
  auto whole = p.next(r, true, ec);
  REQUIRE(whole);
  CHECK(whole.value()->fragment() == WsFragment::kWhole);
  CHECK(bytes_of(whole.value()) == small);
}

TEST_CASE("a message of several frames, or for a client that takes no pieces, comes whole", "[http][relay]") {
  Pair p;
  Reader r(*p.reader);
  const std::string message = v1("iopub", kHeader, 1024 * 1024);
  beast::error_code ec;
  SECTION("several frames: its size is not known from its first") {
    p.writer->auto_fragment(true);
    p.writer->write_buffer_bytes(64 * 1024);
    p.writer->async_write(asio::buffer(message), [](beast::error_code, size_t) {});
    auto m = p.next(r, true, ec);
    REQUIRE(m);
    CHECK(m.value()->fragment() == WsFragment::kWhole);
    CHECK(bytes_of(m.value()) == message);
  }
  SECTION("a legacy client") {
    p.writer->async_write(asio::buffer(message), [](beast::error_code, size_t) {});
    auto m = p.next(r, false, ec);
    REQUIRE(m);
    CHECK(m.value()->fragment() == WsFragment::kWhole);
    CHECK(bytes_of(m.value()) == message);
  }
}

TEST_CASE("a malformed head arriving slowly is refused before any of its message is passed on",
          "[http][relay]") {
  const std::string good = v1("iopub", kHeader, 2 * kPiece);
  std::string long_past_end = good;  // the last offset (n = 7: at 8 * 7) says more than the frame holds
  long_past_end.replace(8 * 7, 8, std::string("\x01\x00\x00\x00\x00\x01\x00\x00", 8));
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"unknown channel", v1("nope", kHeader, 2 * kPiece)},
      {"header not JSON, longer than a read", v1("iopub", "[" + std::string(100 * 1024, ' ') + "]", 2 * kPiece)},
      {"header without msg_type", v1("iopub", R"({"msg_id": "m"})", 2 * kPiece)},
      {"last offset past the frame", long_past_end},
  };
  for (const auto& [what, message] : cases) {
    INFO(what);
    Pair p;
    Reader r(*p.reader);
    p.send_raw(framed(message), 1000);
    beast::error_code ec;
    auto got = p.next(r, true, ec);
    REQUIRE_FALSE(ec);
    REQUIRE_FALSE(got);  // the first result is the refusal: no piece was passed on
    CHECK_FALSE(r.mid_message());
    auto copy = std::make_unique<char[]>(message.size());
    std::memcpy(copy.get(), message.data(), message.size());
    auto whole = cellgate::protocol::V1Frame::from_server(std::move(copy), message.size(), true);
    REQUIRE_FALSE(whole);
    CHECK(got.error().message == whole.error().message);
  }
}

TEST_CASE("a message past read_message_max is refused at its frame header, before any piece", "[http][relay]") {
  Pair p;
  p.reader->read_message_max(2 * kPiece);
  beast::flat_buffer sink;  // the writer answers the close the reader's failure sends
  Reader r(*p.reader);
  const std::string message = v1("iopub", kHeader, 2 * kPiece);  // a little over the cap
  p.writer->async_read(sink, [](beast::error_code, size_t) {});
  p.writer->async_write(asio::buffer(message), [](beast::error_code, size_t) {});
  beast::error_code ec;
  auto got = p.next(r, true, ec);
  CHECK(ec == websocket::error::message_too_big);
  REQUIRE(got);
  CHECK_FALSE(got.value());
  CHECK_FALSE(r.mid_message());
}

TEST_CASE("a message cut off after its first piece ends the read with the message unfinished", "[http][relay]") {
  Pair p;
  Reader r(*p.reader);
  const std::string message = framed(v1("iopub", kHeader, 3 * kPiece));
  p.send_raw(message.substr(0, kPiece), 4096, true);
  beast::error_code ec;
  auto first = p.next(r, true, ec);
  REQUIRE_FALSE(ec);
  REQUIRE(first);
  CHECK(first.value()->fragment() == WsFragment::kFirst);
  CHECK(r.mid_message());
  auto rest = p.next(r, true, ec);
  CHECK(ec);
  CHECK(r.mid_message());  // the relay closes its client with that message unfinished
}
