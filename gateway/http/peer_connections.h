// SPDX-License-Identifier: BSD-3-Clause
// peer_connections: kept-alive mutual-TLS connections to the other nodes' internal listeners
// (docs/cluster.md §5), so that a forwarded request does not pay a TCP and a TLS handshake each time;
// and the rules of when a kept connection may carry a request, or a request go again on a new one.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/system/error_code.hpp>

#include "gateway/http/tls.h"
#include "gateway/http/types.h"

namespace cellgate::http {

// The bound: at most kMaxIdlePerNode idle connections per node address, none kept idle kMaxIdle or
// longer (a listener closes its own idle connections at 60 s: ours go first). So at most
// 16 x (nodes) connections wait, each for at most 20 s. Connections in use are not counted here: each
// is one request being forwarded, bounded where that request was accepted.
inline constexpr size_t kMaxIdlePerNode = 16;
inline constexpr std::chrono::seconds kMaxIdle{20};

// Io thread only: the executor's.
class PeerConnections {
 public:
  explicit PeerConnections(boost::asio::any_io_executor ex);
  ~PeerConnections();  // closes every idle connection
  PeerConnections(const PeerConnections&) = delete;
  PeerConnections& operator=(const PeerConnections&) = delete;

  // An idle connection to address that is still open (still_open), the most recently used first; the
  // ones found closed are closed here. Null when there is none.
  std::unique_ptr<TlsStream> take(const std::string& address);
  // Keeps conn, whose last response was read whole and allows reuse (reusable), for the next request
  // to address. Past the bound, the oldest idle connection to address is closed.
  void put(const std::string& address, std::unique_ptr<TlsStream> conn);
  size_t idle() const;

 private:
  struct State;
  // Closes connections as they reach kMaxIdle; runs while any is idle.
  static boost::asio::awaitable<void> sweep(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;  // shared with sweep, which may outlive this
};

// Whether an idle connection's socket may carry a request: recv(MSG_PEEK | MSG_DONTWAIT) finds nothing
// (EAGAIN). 0 (the peer closed it), data (nothing is owed on an idle connection: a protocol error) or
// an error: not.
bool still_open(int fd);

// RFC 9110 9.2.2: GET, HEAD, OPTIONS, TRACE, PUT and DELETE.
bool idempotent(verb method);

// A kept connection the peer had closed: whether its request may go again, once, on a new connection.
// Only when it was not sent whole, or its method is idempotent: a POST sent whole may have been acted on.
bool may_retry(verb method, bool sent_whole);

// Whether an error writing a request to, or reading the first byte of its response from, a kept
// connection is the peer's close (EOF, reset, broken pipe, TLS stream truncated), not a timeout.
bool closed_by_peer(const boost::system::error_code& ec);

// After a response read whole: whether its connection may carry another request. Not after
// `Connection: close`, HTTP/1.0 without keep-alive, a body delimited by the close, or when bytes
// beyond the response were received (leftover_bytes).
bool reusable(const response_parser<string_body>& parser, size_t leftover_bytes);

// TCP_USER_TIMEOUT (man 7 tcp): data sent and not acknowledged for `after` ends the connection with
// ETIMEDOUT, rather than after minutes of retransmissions. False when the kernel refused it.
bool set_user_timeout(int fd, std::chrono::milliseconds after);

}  // namespace cellgate::http
