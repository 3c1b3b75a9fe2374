// SPDX-License-Identifier: BSD-3-Clause
// http_server: the TCP listener and the HTTP/1.1 session loop (Beast), plain or TLS, handing upgrades to the gateway.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

#include "gateway/gateway.h"

namespace cellgate::gateway {

// Binds ip:port (port 0 picks one). Throws ConfigError when the address cannot be bound.
boost::asio::ip::tcp::acceptor make_acceptor(boost::asio::io_context& io, const std::string& ip, int port);

// Accepts connections until the acceptor is closed; each connection runs its own session coroutine.
// With tls, every connection must complete a TLS handshake within a bounded time first; a plain-HTTP
// request on it is answered 400 in plain text and closed.
boost::asio::awaitable<void> accept_loop(boost::asio::ip::tcp::acceptor& acceptor, Gateway& gateway,
                                         boost::asio::ssl::context* tls = nullptr);

// Whether the client of a request still waiting for its answer has closed its connection (or reset
// it): a peek (MSG_PEEK, no wait) reads end-of-stream or an error. Bytes pending (a pipelined request,
// a TLS record) or none yet mean it is still there. As nginx's check for a client that went away
// while its upstream works; a client that only shut down its sending side looks gone too (HTTP/1.1
// clients that wait for an answer keep it open in practice). -1: unknown, so not gone.
bool client_gone(int fd);

}  // namespace cellgate::gateway
