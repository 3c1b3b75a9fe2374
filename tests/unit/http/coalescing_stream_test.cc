// SPDX-License-Identifier: BSD-3-Clause
// coalescing_stream_test: a Beast WebSocket server over the adapter, a Beast client, real loopback TCP.
#include "gateway/http/coalescing_stream.h"

#include "protocol/ws_frame.h"

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
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
using beast::error_code;

// The socket under the adapter, counting the writes made to it (sendmsg calls) and the bytes they wrote.
struct Counted {
  struct Counts {
    size_t writes = 0;
    size_t bytes = 0;
  };
  beast::tcp_stream inner;
  std::shared_ptr<Counts> counts = std::make_shared<Counts>();

  using executor_type = beast::tcp_stream::executor_type;
  executor_type get_executor() { return inner.get_executor(); }
  beast::tcp_stream& next_layer() { return inner; }
  template <class B, class H>
  auto async_read_some(const B& b, H&& h) {
    return inner.async_read_some(b, std::forward<H>(h));
  }
  template <class B, class H>
  auto async_write_some(const B& b, H&& h) {
    ++counts->writes;
    return inner.async_write_some(
        b, [c = counts, h = std::forward<H>(h)](error_code ec, size_t n) mutable {
          c->bytes += n;
          h(ec, n);
        });
  }
  // The adapter's immediate write, as on a plain tcp_stream.
  template <class Buffers>
  friend size_t coalescing_write_now(Counted& s, const Buffers& b, error_code& ec) {
    ++s.counts->writes;
    const size_t n = cellgate::http::coalescing_write_now(s.inner, b, ec);
    s.counts->bytes += n;
    return n;
  }
  template <class H>
  friend void async_teardown(beast::role_type role, Counted& s, H&& h) {
    beast::websocket::async_teardown(role, s.inner.socket(), std::forward<H>(h));
  }
};

using Server = websocket::stream<cellgate::http::CoalescingStream<Counted>>;
using Client = websocket::stream<beast::tcp_stream>;

using cellgate::test::run_until;

struct Pair {
  asio::io_context io;
  std::unique_ptr<Server> server;
  std::unique_ptr<Client> client;
  std::shared_ptr<Counted::Counts> counts;

  explicit Pair(int small_buffers = 0) {
    auto sockets = cellgate::test::loopback_sockets(io, small_buffers);
    server = std::make_unique<Server>(Counted{beast::tcp_stream(std::move(sockets.server))});
    counts = server->next_layer().next_layer().counts;
    client = std::make_unique<Client>(beast::tcp_stream(std::move(sockets.client)));
    cellgate::test::handshake(io, *server, *client);
    server->binary(true);
    server->auto_fragment(false);  // as ws_session: one frame per message
  }
  std::string read_one() {
    beast::flat_buffer b;
    bool done = false;
    client->async_read(b, [&](error_code ec, size_t) {
      REQUIRE(!ec);
      done = true;
    });
    run_until(io, [&] { return done; });
    return beast::buffers_to_string(b.data());
  }
};

// Writes messages one after another (each on the previous one's completion), as ws_session does.
struct Chain {
  Chain(Server& w, std::vector<std::string> m) : ws(w), messages(std::move(m)) {}
  Server& ws;
  std::vector<std::string> messages;
  size_t completed = 0;
  error_code error;
  void next() {
    if (completed == messages.size()) return;
    ws.async_write(asio::buffer(messages[completed]), [this](error_code ec, size_t) {
      if (ec) {
        error = ec;
        return;
      }
      ++completed;
      next();
    });
  }
};

}  // namespace

TEST_CASE("messages written in one io turn go to the socket in one write, in order", "[coalescing_stream]") {
  Pair p;
  const size_t writes_before = p.counts->writes;
  const size_t bytes_before = p.counts->bytes;
  const uint64_t flushes_before = p.server->next_layer().flushes();
  Chain chain{*p.server, {"first", "second", std::string(3000, 'x'), "last"}};
  asio::post(p.io, [&] { chain.next(); });
  const size_t frames = 2 + 5 + 2 + 6 + 4 + 3000 + 2 + 4;  // header + payload each
  run_until(p.io, [&] { return chain.completed == 4 && p.counts->bytes - bytes_before == frames; });
  CHECK(p.server->next_layer().flushes() - flushes_before == 1);
  CHECK(p.counts->writes - writes_before == 1);
  CHECK(p.read_one() == "first");
  CHECK(p.read_one() == "second");
  CHECK(p.read_one() == std::string(3000, 'x'));
  CHECK(p.read_one() == "last");
}

TEST_CASE("a large write goes to the socket directly, after what was pending", "[coalescing_stream]") {
  Pair p;
  const uint64_t flushes_before = p.server->next_layer().flushes();
  const std::string big(3 << 20, 'b');
  Chain chain{*p.server, {"before", big, "after"}};
  asio::post(p.io, [&] { chain.next(); });
  size_t got = 0;
  std::vector<std::string> read;
  std::function<void()> read_next;
  beast::flat_buffer buf;
  read_next = [&] {
    p.client->async_read(buf, [&](error_code ec, size_t) {
      REQUIRE(!ec);
      read.push_back(beast::buffers_to_string(buf.data()));
      buf.consume(buf.size());
      if (++got < 3) read_next();
    });
  };
  read_next();
  run_until(p.io, [&] { return got == 3 && chain.completed == 3; });
  REQUIRE(read.size() == 3);
  CHECK(read[0] == "before");
  CHECK(read[1] == big);
  CHECK(read[2] == "after");
  // "before" and "after" were copied and flushed; the big frame went to the socket directly.
  CHECK(p.server->next_layer().flushes() - flushes_before == 2);
}

TEST_CASE("a ping is answered between coalesced messages, and both closes complete", "[coalescing_stream]") {
  Pair p;
  bool ponged = false;
  p.client->control_callback([&](websocket::frame_type kind, beast::string_view payload) {
    if (kind == websocket::frame_type::pong && payload == "hi") ponged = true;
  });
  // The server reads (Beast answers pings inside its read) while it writes a burst.
  error_code server_read;
  bool server_read_done = false;
  beast::flat_buffer sbuf;
  p.server->async_read(sbuf, [&](error_code ec, size_t) {
    server_read = ec;
    server_read_done = true;
  });
  bool pinged = false;
  p.client->async_ping("hi", [&](error_code ec) { pinged = !ec; });
  Chain chain{*p.server, {}};
  for (int i = 0; i < 50; ++i) chain.messages.push_back("m" + std::to_string(i));
  chain.next();
  std::vector<std::string> got;
  for (int i = 0; i < 50; ++i) got.push_back(p.read_one());  // the pong arrives inside these reads
  run_until(p.io, [&] { return pinged && chain.completed == 50; });
  CHECK(ponged);
  for (int i = 0; i < 50; ++i) CHECK(got[static_cast<size_t>(i)] == "m" + std::to_string(i));

  // The client closes: the server's close reply sits in the pending buffer when Beast tears the
  // connection down, so the teardown must send it first or the client's close fails.
  error_code client_close = websocket::error::closed;
  bool client_closed = false;
  p.client->async_close(websocket::close_code::going_away, [&](error_code ec) {
    client_close = ec;
    client_closed = true;
  });
  run_until(p.io, [&] { return client_closed && server_read_done; });
  CHECK(!client_close);
  CHECK(server_read == websocket::error::closed);
  CHECK(p.server->reason().code == websocket::close_code::going_away);
}

TEST_CASE("the server's close goes out after the messages queued before it", "[coalescing_stream]") {
  Pair p;
  Chain chain{*p.server, {"one", "two"}};
  bool server_closed = false;
  error_code close_ec = websocket::error::closed;
  asio::post(p.io, [&] {
    chain.next();
    // Beast holds the close until the write in progress completes, then writes it through the adapter.
    p.server->async_close(websocket::close_reason(websocket::close_code::policy_error, "bye"), [&](error_code ec) {
      close_ec = ec;
      server_closed = true;
    });
  });
  CHECK(p.read_one() == "one");
  beast::flat_buffer b;
  error_code read_ec;
  bool read_done = false;
  p.client->async_read(b, [&](error_code ec, size_t) {
    read_ec = ec;
    read_done = true;
  });
  run_until(p.io, [&] { return read_done; });
  // "two" was queued behind "one" by the chain after the close began, so Beast may close first; either
  // way every frame the client got is whole and the close carries its code.
  if (!read_ec) {
    CHECK(beast::buffers_to_string(b.data()) == "two");
    read_done = false;
    p.client->async_read(b, [&](error_code ec, size_t) {
      read_ec = ec;
      read_done = true;
    });
    run_until(p.io, [&] { return read_done; });
  }
  CHECK(read_ec == websocket::error::closed);
  CHECK(p.client->reason().code == websocket::close_code::policy_error);
  run_until(p.io, [&] { return server_closed; });
  CHECK(!close_ec);
}

TEST_CASE("a peer that does not read stops the writes: backpressure", "[coalescing_stream]") {
  // Copied messages, and messages large enough to go to the socket directly.
  const size_t size = GENERATE(size_t{8 * 1024}, size_t{20 * 1024});
  Pair p(64 * 1024);
  Chain chain{*p.server, {}};
  for (int i = 0; i < 1024; ++i) chain.messages.push_back(std::to_string(i) + std::string(size, '.'));
  chain.next();
  // Everything that can run without the client reading.
  for (;;) {
    if (p.io.stopped()) p.io.restart();
    if (p.io.poll() == 0) break;
  }
  REQUIRE(!chain.error);
  CHECK(chain.completed < chain.messages.size());
  // What completed but the socket did not take is at most the pending buffer.
  size_t completed_bytes = 0;
  for (size_t i = 0; i < chain.completed; ++i) completed_bytes += chain.messages[i].size() + 4;  // 16-bit length
  CHECK(completed_bytes <= p.counts->bytes + cellgate::http::CoalescingStream<Counted>::kFlushAt +
                              cellgate::http::CoalescingStream<Counted>::kCopyBelow);

  // The client reads: every message arrives, whole and in order.
  for (size_t i = 0; i < chain.messages.size(); ++i) {
    auto m = p.read_one();
    REQUIRE(m == chain.messages[i]);
  }
  run_until(p.io, [&] { return chain.completed == chain.messages.size(); });
}

namespace {
// A whole binary frame as ws_session builds it: its header, then the payload.
struct RawFrame {
  explicit RawFrame(std::string p) : payload(std::move(p)), header(true, payload.size()) {}
  std::string payload;
  cellgate::protocol::WsFrameHeader header;
  std::vector<asio::const_buffer> buffers() const { return {asio::buffer(header.data(), header.size()), asio::buffer(payload)}; }
};
}  // namespace

TEST_CASE("a write is never split by another writer's: Beast's pong waits for a whole big frame", "[coalescing_stream]") {
  Pair p(16 * 1024);  // small socket buffers: the big frame takes many sendmsg calls
  bool ponged = false;
  p.client->control_callback([&](websocket::frame_type kind, beast::string_view payload) {
    if (kind == websocket::frame_type::pong && payload == "mid") ponged = true;
  });
  beast::flat_buffer sbuf;
  p.server->async_read(sbuf, [](error_code, size_t) {});  // Beast answers pings inside its read
  std::string big(4 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7 + i / 4096);
  RawFrame frame(big);
  const auto buffers = frame.buffers();
  bool written = false;
  // One async_write_some, as ws_session writes (asio::async_write would hand over 64 KiB at a time, and
  // another writer could get in between its pieces).
  p.server->next_layer().async_write_some(buffers, [&](error_code ec, size_t n) {
    REQUIRE(!ec);
    CHECK(n == frame.header.size() + big.size());  // all of it, in one completion
    written = true;
  });
  // The ping arrives while the frame is still going out; the pong must come after its last byte.
  bool pinged = false;
  p.client->async_ping("mid", [&](error_code ec) { pinged = !ec; });
  CHECK(p.read_one() == big);
  run_until(p.io, [&] { return written && pinged; });
  // The client sees the pong inside its next read.
  RawFrame after("after");
  const auto after_buffers = after.buffers();
  p.server->next_layer().async_write_some(after_buffers, [](error_code ec, size_t) { REQUIRE(!ec); });
  CHECK(p.read_one() == "after");
  CHECK(ponged);
}

TEST_CASE("write_now writes at once only when nothing is pending, so bytes keep their order", "[coalescing_stream]") {
  Pair p;
  auto& stream = p.server->next_layer();
  RawFrame one("one"), two("two"), three("three");
  // A copied write leaves its bytes pending until its completion has run: write_now must decline.
  bool done = false;
  stream.async_write_some(one.buffers(), [&](error_code ec, size_t) { done = !ec; });
  CHECK(stream.write_now(two.buffers()) == 0);
  run_until(p.io, [&] { return done; });
  // Flushed now: the socket takes a small write whole, with no operation.
  const size_t writes = p.counts->writes;
  CHECK(stream.write_now(two.buffers()) == two.header.size() + 3);
  CHECK(stream.write_now(three.buffers()) == three.header.size() + 5);
  CHECK(p.counts->writes == writes + 2);
  CHECK(p.read_one() == "one");
  CHECK(p.read_one() == "two");
  CHECK(p.read_one() == "three");
}
