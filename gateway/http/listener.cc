// SPDX-License-Identifier: BSD-3-Clause
// listener: the TCP listener.
#include "gateway/http/listener.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "common/config_error.h"
#include "common/log.h"
#include "gateway/http/session.h"

namespace cellgate::http {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

void log_session_end(std::exception_ptr e) {
  if (!e) return;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    common::log_error("msg=\"connection ended by an exception\" error=\"{}\"", ex.what());
  }
}

}  // namespace

tcp::acceptor make_acceptor(asio::io_context& io, const std::string& ip, int port) {
  boost::system::error_code ec;
  auto address = asio::ip::make_address(ip, ec);
  if (ec) throw common::ConfigError("--ip: not an IP address: '" + ip + "'");
  tcp::endpoint ep(address, static_cast<unsigned short>(port));
  tcp::acceptor acceptor(io);
  acceptor.open(ep.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(ep, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw common::ConfigError("cannot listen on " + ip + ":" + std::to_string(port) + ": " + ec.message());
  return acceptor;
}

asio::awaitable<void> accept_loop(tcp::acceptor& acceptor, Handler& handler, Limits limits, asio::ssl::context* tls,
                                  bool cluster) {
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
    if (tls)
      asio::co_spawn(acceptor.get_executor(), tls_session(std::move(socket), handler, limits, *tls, cluster),
                     log_session_end);
    else
      asio::co_spawn(acceptor.get_executor(), plain_session(std::move(socket), handler, limits), log_session_end);
  }
}

}  // namespace cellgate::http
