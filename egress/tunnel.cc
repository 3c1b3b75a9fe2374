// SPDX-License-Identifier: BSD-3-Clause
// tunnel: copying bytes both ways between a kernel and an upstream (CONNECT, 101 upgrades), metered.
#include "egress/tunnel.h"

#include <memory>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "egress/splice_pump.h"

namespace cellgate::egress {
namespace {

namespace asio = boost::asio;
using boost::beast::tcp_stream;
using Clock = std::chrono::steady_clock;

constexpr size_t kChunk = 64 * 1024;

struct Shared {
  explicit Shared(asio::any_io_executor ex) : done(ex), watchdog(ex) {}
  asio::steady_timer done;      // cancelled when the second direction ends
  asio::steady_timer watchdog;  // idle check
  Clock::time_point last = Clock::now();
  int running = 2;
  bool cut = false;
  std::string why;
};

void cut_both(Shared& s, tcp_stream& a, tcp_stream& b, std::string why) {
  if (!s.cut) {
    s.cut = true;
    s.why = std::move(why);
  }
  boost::system::error_code ignored;
  a.socket().close(ignored);
  b.socket().close(ignored);
}

// Copies one direction until EOF (passed on as a half-close), an error, or the meter refuses. Through
// a pipe (splice, no copy in user space) when one can be made, else through a buffer.
asio::awaitable<void> pump(tcp_stream& from, tcp_stream& to, const std::function<bool(uint64_t)>& charge,
                           std::shared_ptr<Shared> s) {
  boost::system::error_code ec;
  if (auto pipe = SplicePipe::make()) {
    // The watchdog judges idleness over both directions; each wait here may last as long.
    SpliceResult r = co_await splice_bytes(from.socket(), to.socket(), *pipe, ~uint64_t{0}, charge,
                                           std::chrono::hours(24 * 365), &s->last);
    if (r.eof) {
      to.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
    } else if (!s->cut) {
      cut_both(*s, from, to, r.error);
    }
  } else {
    std::vector<char> buf(kChunk);
    for (;;) {
      size_t n = co_await from.socket().async_read_some(asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
      if (ec == asio::error::eof) {
        // Pass the half-close on: a client that shut down its sending side still reads the answer.
        to.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
        break;
      }
      if (ec) {
        if (!s->cut) cut_both(*s, from, to, ec == asio::error::operation_aborted ? "" : ec.message());
        break;
      }
      s->last = Clock::now();
      if (!charge(n)) {
        cut_both(*s, from, to, "egress byte cap reached");
        break;
      }
      co_await asio::async_write(to.socket(), asio::buffer(buf.data(), n), asio::redirect_error(asio::use_awaitable, ec));
      if (ec) {
        if (!s->cut) cut_both(*s, from, to, ec == asio::error::operation_aborted ? "" : ec.message());
        break;
      }
    }
  }
  if (--s->running == 0) {
    s->done.cancel();
    s->watchdog.cancel();
  }
}

asio::awaitable<void> watch(tcp_stream& a, tcp_stream& b, std::chrono::milliseconds idle, std::shared_ptr<Shared> s) {
  while (s->running > 0) {
    s->watchdog.expires_after(idle / 4 + std::chrono::milliseconds(1));
    boost::system::error_code ec;
    co_await s->watchdog.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (s->running > 0 && Clock::now() - s->last > idle) cut_both(*s, a, b, "idle for too long");
  }
}

}  // namespace

asio::awaitable<std::string> relay_tunnel(tcp_stream& client, tcp_stream& upstream, const TunnelMeter& meter,
                                          std::chrono::milliseconds idle) {
  auto ex = co_await asio::this_coro::executor;
  auto s = std::make_shared<Shared>(ex);
  client.expires_never();
  upstream.expires_never();
  s->done.expires_at(Clock::time_point::max());
  asio::co_spawn(ex, pump(upstream, client, meter.in, s), asio::detached);
  asio::co_spawn(ex, watch(client, upstream, idle, s), asio::detached);
  co_await pump(client, upstream, meter.out, s);
  if (s->running > 0) {
    boost::system::error_code ec;
    co_await s->done.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  co_return s->why;
}

}  // namespace cellgate::egress
