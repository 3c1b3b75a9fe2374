// SPDX-License-Identifier: BSD-3-Clause
// listener: the TCP listener; each connection it accepts runs its own session (session.h).
#pragma once

#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

#include "gateway/http/handler.h"

namespace cellgate::http {

// Binds ip:port (port 0 picks one). Throws common::ConfigError when the address cannot be bound.
boost::asio::ip::tcp::acceptor make_acceptor(boost::asio::io_context& io, const std::string& ip, int port);

// Accepts connections until the acceptor is closed; each connection runs its own session coroutine
// serving handler (which must outlive them). With tls, every connection must complete a TLS handshake
// within a bounded time first; a plain-HTTP request on it is answered 400 in plain text and closed.
// cluster: the internal listener (tls is a mutual-TLS context; see tls_session).
boost::asio::awaitable<void> accept_loop(boost::asio::ip::tcp::acceptor& acceptor, Handler& handler, Limits limits,
                                         boost::asio::ssl::context* tls = nullptr, bool cluster = false);

}  // namespace cellgate::http
