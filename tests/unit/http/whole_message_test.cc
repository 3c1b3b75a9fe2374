// SPDX-License-Identifier: BSD-3-Clause
// whole_message_test: a relay's read of a whole message into memory of its own, over real loopback TCP
// between two Beast WebSockets: small and large messages, one frame or several, and the size bound.
#include "gateway/http/whole_message.h"

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket.hpp>
#include <catch2/catch.hpp>

#include "tests/unit/http/loopback_ws.h"

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using Ws = websocket::stream<beast::tcp_stream>;
using cellgate::http::WholeMessageScratch;

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
  }
  // Reads one message while the writer writes `frames` (the last one ends the message).
  std::optional<std::string> relay(const std::vector<std::string>& frames, WholeMessageScratch& scratch,
                                   beast::error_code& ec, size_t* regrown = nullptr) {
    std::optional<std::string> got;
    bool done = false;
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
      auto m = co_await cellgate::http::read_whole_message(*reader, scratch, ec);
      if (!ec) got = std::string(m.data.get(), m.size);
      if (regrown) *regrown = m.regrown;
      done = true;
    }, asio::detached);
    size_t i = 0;
    std::function<void()> next = [&] {
      if (i == frames.size()) return;
      const bool fin = i + 1 == frames.size();
      writer->async_write_some(fin, asio::buffer(frames[i]), [&](beast::error_code wec, size_t) {
        if (wec) return;
        ++i;
        next();
      });
    };
    next();
    run_until(io, [&] { return done; });
    return got;
  }
};

std::string pattern(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 31 + static_cast<size_t>(seed)) & 0xff);
  return s;
}

}  // namespace

TEST_CASE("a whole message is read, whatever its size and framing", "[http][relay]") {
  Pair p;
  WholeMessageScratch scratch;
  const size_t k = WholeMessageScratch::kSize;
  const std::vector<std::vector<std::string>> messages = {
      {pattern(500, 1)},                                        // fits the scratch: copied once, exactly
      {std::string()},                                          // empty
      {pattern(k, 2)},                                          // exactly the scratch
      {pattern(k + 1, 3)},                                      // one byte more
      {pattern(3 * 1024 * 1024 + 7, 4)},                        // one large frame: its declared length
      {pattern(100, 5), pattern(40000, 6), pattern(9, 7)},      // several frames
      {pattern(k - 3, 8), pattern(3 * k, 9), pattern(2 * k, 10)},
  };
  for (const auto& frames : messages) {
    std::string whole;
    for (const auto& f : frames) whole += f;
    INFO(frames.size() << " frames, " << whole.size() << " bytes");
    beast::error_code ec;
    auto got = p.relay(frames, scratch, ec);
    REQUIRE_FALSE(ec);
    REQUIRE(got);
    CHECK(got->size() == whole.size());
    CHECK(*got == whole);
  }
}

TEST_CASE("a message past read_message_max fails the read before its bytes are held", "[http][relay]") {
  Pair p;
  p.reader->read_message_max(64 * 1024);
  // The writer reads too, so that it answers the close the reader's failure sends.
  beast::flat_buffer sink;
  p.writer->async_read(sink, [](beast::error_code, size_t) {});
  WholeMessageScratch scratch;
  beast::error_code ec;
  auto got = p.relay({pattern(64 * 1024 + 1, 1)}, scratch, ec);
  CHECK_FALSE(got);
  CHECK(ec == websocket::error::message_too_big);
}

TEST_CASE("a message of many frames is moved to a larger buffer a few times, not once per frame", "[http][relay]") {
  Pair p;
  WholeMessageScratch scratch;
  // 300 frames of 20 KiB: each declares more than the room left. Grown to an exact fit per frame, the
  // buffer moved once per frame and copied ~900 MB; doubling moves it about log2(6 MB / 16 KiB) times.
  std::vector<std::string> frames;
  std::string whole;
  for (int i = 0; i < 300; ++i) {
    frames.push_back(pattern(20 * 1024, i));
    whole += frames.back();
  }
  beast::error_code ec;
  size_t regrown = 0;
  auto got = p.relay(frames, scratch, ec, &regrown);
  REQUIRE_FALSE(ec);
  REQUIRE(got);
  CHECK(*got == whole);
  CHECK(regrown <= 12);  // an exact fit per frame: ~300
}

TEST_CASE("a message of many frames just under read_message_max is read whole", "[http][relay]") {
  Pair p;
  const size_t max = 1024 * 1024;
  p.reader->read_message_max(max);
  WholeMessageScratch scratch;
  std::vector<std::string> frames;
  std::string whole;
  for (int i = 0; i < 50; ++i) {  // 1000 KiB in 50 frames: the last doubling would be 2 MiB
    frames.push_back(pattern(20 * 1024, i));
    whole += frames.back();
  }
  beast::error_code ec;
  auto got = p.relay(frames, scratch, ec);
  REQUIRE_FALSE(ec);
  REQUIRE(got);
  CHECK(*got == whole);
}
