// SPDX-License-Identifier: BSD-3-Clause
// session: one connection's HTTP/1.1 request loop (Beast), plain or TLS: read a request within its
// bounds, hand it to the handler, write the reply (a body, a file, or chunks); an upgrade becomes a
// WebSocket connection when the handler accepts it.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

#include "gateway/http/handler.h"

namespace cellgate::http {

// Serves the connection until it ends. Malformed or oversized requests get one error response, and
// the connection is closed (the stream position is unknown).
boost::asio::awaitable<void> plain_session(boost::asio::ip::tcp::socket socket, Handler& handler, Limits limits);
// As plain_session, after a TLS handshake bounded in time; plain HTTP sent instead gets a plain-text 400.
// cluster: ctx verified the client's certificate (the internal listener); its CN is Peer::cluster_peer.
boost::asio::awaitable<void> tls_session(boost::asio::ip::tcp::socket socket, Handler& handler, Limits limits,
                                         boost::asio::ssl::context& ctx, bool cluster = false);

}  // namespace cellgate::http
