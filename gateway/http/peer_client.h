// SPDX-License-Identifier: BSD-3-Clause
// peer_client: requests and kernel WebSockets to another node's internal listener (docs/cluster.md §5):
// mutual TLS with the cluster CA, the server's certificate checked against the address dialled.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/websocket/stream.hpp>

#include "common/result.h"
#include "gateway/http/peer_connections.h"
#include "gateway/http/tls.h"
#include "gateway/http/types.h"

namespace cellgate::http {

using PeerWebSocket = boost::beast::websocket::stream<TlsStream>;

// Io thread only. A request goes on a kept-alive connection to its node when one is idle
// (peer_connections.h), else on a new one; a kernel WebSocket always on a new one. Every step is bounded.
class PeerClient {
 public:
  // timeout: a connection's setup, a request's sending, and (TCP_USER_TIMEOUT) how long a kept
  // connection waits for its peer to acknowledge what was sent.
  PeerClient(boost::asio::any_io_executor ex, std::unique_ptr<boost::asio::ssl::context> ctx,
             std::chrono::milliseconds timeout)
      : ctx_(std::move(ctx)), timeout_(timeout), kept_(std::move(ex)) {}

  // Sends req to address (host:port) as the client at client_ip (X-Forwarded-For) and returns the
  // answer, whose body may be at most max_body bytes. Hop-by-hop headers are dropped both ways.
  // kUnavailable when the node cannot be reached, kTimeout when it does not answer in time. A kept
  // connection the node had closed is replaced once, when may_retry allows it.
  boost::asio::awaitable<common::Result<Response>> forward(Request req, std::string address, std::string client_ip,
                                                           uint64_t max_body);
  // Opens the kernel WebSocket req asks for (its target, Authorization, Origin) on address, always in
  // the v1 protocol whatever the client speaks: the relay reads messages without JSON parsing.
  boost::asio::awaitable<common::Result<std::unique_ptr<PeerWebSocket>>> open_ws(const Request& req, std::string address,
                                                                                std::string client_ip,
                                                                                uint64_t max_message);
  size_t idle_connections() const { return kept_.idle(); }

 private:
  struct Exchange;
  // kept: a connection for requests, which then fails after timeout_ without acknowledgement.
  boost::asio::awaitable<common::Result<std::unique_ptr<TlsStream>>> connect(const std::string& address, bool kept);
  // One request and its response on stream.
  boost::asio::awaitable<Exchange> exchange(TlsStream& stream, Request& req, const std::string& address,
                                            uint64_t max_body);

  std::unique_ptr<boost::asio::ssl::context> ctx_;
  std::chrono::milliseconds timeout_;
  PeerConnections kept_;  // after ctx_: its streams go first
};

// Removes the hop-by-hop headers (RFC 9110 7.6.1) and those a peer node believes only from another node.
void strip_hop_by_hop(fields& headers);

}  // namespace cellgate::http
