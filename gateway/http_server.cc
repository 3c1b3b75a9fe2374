// SPDX-License-Identifier: BSD-3-Clause
// http_server: the TCP listener and the HTTP/1.1 session loop.
#include "gateway/http_server.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include "common/log.h"

namespace cellgate::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
using asio::awaitable;
using asio::ip::tcp;

namespace {

constexpr auto kReadTimeout = std::chrono::seconds(60);   // a request must arrive in full within this
constexpr uint32_t kHeaderLimit = 64 * 1024;

awaitable<void> session(tcp::socket socket, Gateway& gw) {
  beast::tcp_stream stream(std::move(socket));
  boost::system::error_code ec;
  // Nagle adds ~40 ms to small request/response pairs (measured against jupyter_server).
  stream.socket().set_option(tcp::no_delay(true), ec);
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(kHeaderLimit);
    parser.body_limit(gw.config().max_body_bytes);
    stream.expires_after(kReadTimeout);
    co_await http::async_read(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
    if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == asio::error::eof) break;
    if (ec) {
      // Malformed or oversized: say so once, then close (the stream position is unknown).
      Request bad{http::verb::get, "/", 11};
      bool too_large = ec == http::error::body_limit || ec == http::error::header_limit;
      auto res = error_response(bad, too_large ? common::Errc::kTooLarge : common::Errc::kBadRequest,
                                too_large ? "request too large" : "malformed HTTP request: " + ec.message());
      res.keep_alive(false);
      stream.expires_after(std::chrono::seconds(5));
      co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
      break;
    }
    Request req = parser.release();
    std::string peer = stream.socket().remote_endpoint(ec).address().to_string();
    if (beast::websocket::is_upgrade(req)) {
      stream.expires_never();
      co_await gw.handle_upgrade(std::move(stream), std::move(req), std::move(peer));
      co_return;
    }
    stream.expires_never();  // handlers may wait for a kernel to start
    if (gw.is_stream_request(req)) {
      bool keep = req.keep_alive();
      co_await gw.handle_stream(stream, std::move(req), std::move(peer));
      if (!keep) break;
      continue;
    }
    Response res = co_await gw.handle(std::move(req), std::move(peer));
    bool keep = res.keep_alive();
    stream.expires_after(std::chrono::seconds(60));
    co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
    if (ec || !keep) break;
  }
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
}

}  // namespace

tcp::acceptor make_acceptor(asio::io_context& io, const std::string& ip, int port) {
  boost::system::error_code ec;
  auto address = asio::ip::make_address(ip, ec);
  if (ec) throw ConfigError("--ip: not an IP address: '" + ip + "'");
  tcp::endpoint ep(address, static_cast<unsigned short>(port));
  tcp::acceptor acceptor(io);
  acceptor.open(ep.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(ep, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw ConfigError("cannot listen on " + ip + ":" + std::to_string(port) + ": " + ec.message());
  return acceptor;
}

awaitable<void> accept_loop(tcp::acceptor& acceptor, Gateway& gw) {
  gw.set_local_port(acceptor.local_endpoint().port());
  for (;;) {
    boost::system::error_code ec;
    tcp::socket socket = co_await acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) {
      // EMFILE and friends: back off briefly instead of spinning.
      common::log_warn("msg=\"accept failed\" error=\"{}\"", ec.message());
      asio::steady_timer t(acceptor.get_executor());
      t.expires_after(std::chrono::milliseconds(50));
      co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    asio::co_spawn(acceptor.get_executor(), session(std::move(socket), gw), [](std::exception_ptr e) {
      if (!e) return;
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        common::log_error("msg=\"connection ended by an exception\" error=\"{}\"", ex.what());
      }
    });
  }
}

}  // namespace cellgate::gateway
