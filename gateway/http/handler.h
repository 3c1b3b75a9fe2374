// SPDX-License-Identifier: BSD-3-Clause
// handler: what the transport asks of whoever serves requests (the REST API, notebook-http): a reply
// for each request, and a decision for each WebSocket upgrade. The transport knows nothing else.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include <boost/asio/awaitable.hpp>

#include "gateway/http/file_body.h"
#include "gateway/http/types.h"
#include "gateway/http/ws_connection.h"
#include "protocol/ws_codec.h"

namespace cellgate::http {

// Who sent a request: the peer's address, and the connection's socket.
struct Peer {
  std::string ip;
  int fd = -1;  // -1 when there is none
  // A connection to the cluster's internal listener: the name (certificate CN) of the node at the other
  // end, which mutual TLS with the cluster CA has proven. "" on every other listener: only here are a
  // request's X-Forwarded-For and X-Cellgate-* headers believed (docs/cluster.md).
  std::string cluster_peer{};
  // Whether the client of a request still waiting for its answer has closed its connection (or reset
  // it): a peek (MSG_PEEK, no wait) reads end-of-stream or an error. Bytes pending (a pipelined request,
  // a TLS record) or none yet mean it is still there. As nginx's check for a client that went away
  // while its upstream works; a client that only shut down its sending side looks gone too (HTTP/1.1
  // clients that wait for an answer keep it open in practice). No socket: unknown, so not gone.
  bool gone() const;
};

// A response body produced while it is sent (NDJSON lines): each piece goes out as one HTTP/1.1 chunk.
class ChunkSource {
 public:
  virtual ~ChunkSource() = default;
  // The next piece, or nullopt at the end. Io thread. The source must not depend on the client: when
  // the client goes away the session stops asking, and whatever produces the pieces ends on its own.
  // The session learns that the client left only when a write fails: a source that may stay silent
  // for long (an event stream) yields a keep-alive piece now and then.
  virtual boost::asio::awaitable<std::optional<std::string>> next() = 0;
};

// The answer to one request: res with its body, or res as the head of a body sent from file or chunks.
struct Reply {
  Response res;
  std::optional<FileBody> file;          // body: the file's bytes (res has its Content-Length)
  std::shared_ptr<ChunkSource> chunks;   // body: chunked, piece by piece (res is the head)
};

// An upgrade the handler accepts: the transport completes the WebSocket handshake and serves endpoint.
struct WsAccept {
  std::shared_ptr<WsEndpoint> endpoint;
  std::string session_id;
  protocol::WsProtocol protocol = protocol::WsProtocol::kLegacy;
  WsLimits limits{};
  std::shared_ptr<void> lease;  // held until the connection ends (a count of the user's open sockets)
  std::string user{};           // who the handler authenticated (WsSession::user)
  std::string client{};         // the client's name for itself, a label (WsSession::client)
};
// A refusal is an ordinary response (written, then the connection is closed).
using Upgrade = std::variant<Response, WsAccept>;

// What the transport refuses itself, before a handler sees the request or message.
enum class Refusal : uint8_t {
  kHeaderTooLarge,  // 431: request line and headers over Limits::max_header_bytes
  kBodyTooLarge,    // 413: body over Limits::max_body_bytes (announced or sent)
  kMessageTooBig,   // WebSocket closed with 1009: a client message over WsLimits::max_message_bytes
};

// Io thread only. Neither call throws: failures are responses.
class Handler {
 public:
  virtual ~Handler() = default;
  virtual boost::asio::awaitable<Reply> handle(Request req, Peer peer) = 0;
  virtual boost::asio::awaitable<Upgrade> upgrade(Request& req, Peer peer) = 0;
  // The transport refused something on this handler's listener (for counting; the answer is sent).
  virtual void refused(Refusal) noexcept {}
  // Asked with a request's head, before its body is read, when the body may be larger than
  // Limits::unauthenticated_body_bytes: false refuses it (401) unread. Default: any may send one.
  virtual boost::asio::awaitable<bool> may_send_large_body(const Request& head, const Peer& peer) {
    (void)head;
    (void)peer;
    co_return true;
  }
};

// Bounds the session applies to every request before the handler sees it.
struct Limits {
  uint64_t max_header_bytes = 64ull << 10;  // request line and headers (431)
  uint64_t max_body_bytes = 64ull << 20;    // body (413)
  // A larger body (or a chunked one) is read only once the handler has accepted the head (its token):
  // nobody without a token makes the gateway read and hold max_body_bytes.
  uint64_t unauthenticated_body_bytes = 64ull << 10;
};

}  // namespace cellgate::http
