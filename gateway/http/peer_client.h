// SPDX-License-Identifier: BSD-3-Clause
// peer_client: requests and kernel WebSockets to another node's internal listener (docs/cluster.md §5):
// mutual TLS with the cluster CA, the server's certificate checked against the address dialled.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/websocket/stream.hpp>

#include "common/result.h"
#include "gateway/http/tls.h"
#include "gateway/http/types.h"

namespace cellgate::http {

using PeerWebSocket = boost::beast::websocket::stream<TlsStream>;

// Io thread only. One connection per request or WebSocket; every step is bounded by timeout.
class PeerClient {
 public:
  PeerClient(std::unique_ptr<boost::asio::ssl::context> ctx, std::chrono::milliseconds timeout)
      : ctx_(std::move(ctx)), timeout_(timeout) {}

  // Sends req to address (host:port) as the client at client_ip (X-Forwarded-For) and returns the
  // answer, whose body may be at most max_body bytes. Hop-by-hop headers are dropped both ways.
  // kUnavailable when the node cannot be reached, kTimeout when it does not answer in time.
  boost::asio::awaitable<common::Result<Response>> forward(Request req, std::string address, std::string client_ip,
                                                           uint64_t max_body);
  // Opens the kernel WebSocket req asks for (its target, Authorization, Origin) on address, always in
  // the v1 protocol whatever the client speaks: the relay reads messages without JSON parsing.
  boost::asio::awaitable<common::Result<std::unique_ptr<PeerWebSocket>>> open_ws(const Request& req, std::string address,
                                                                                std::string client_ip,
                                                                                uint64_t max_message);

 private:
  boost::asio::awaitable<common::Result<std::unique_ptr<TlsStream>>> connect(const std::string& address);

  std::unique_ptr<boost::asio::ssl::context> ctx_;
  std::chrono::milliseconds timeout_;
};

// Removes the hop-by-hop headers (RFC 9110 7.6.1) and those a peer node believes only from another node.
void strip_hop_by_hop(fields& headers);

}  // namespace cellgate::http
