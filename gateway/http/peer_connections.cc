// SPDX-License-Identifier: BSD-3-Clause
// peer_connections: the idle connections to other nodes, their expiry, and the rules of reuse.
#include "gateway/http/peer_connections.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "common/log.h"
#include "gateway/http/idle_set.h"

namespace cellgate::http {

namespace asio = boost::asio;

struct PeerConnections::State {
  explicit State(asio::any_io_executor ex) : timer(std::move(ex)) {}
  IdleSet<std::unique_ptr<TlsStream>> idle{kMaxIdlePerNode, kMaxIdle};
  asio::steady_timer timer;
  bool sweeping = false;
  bool closed = false;
};

PeerConnections::PeerConnections(asio::any_io_executor ex) : state_(std::make_shared<State>(std::move(ex))) {}

PeerConnections::~PeerConnections() {
  state_->closed = true;
  state_->timer.cancel();
  state_->idle.clear();  // now, while the TLS context the streams use is still there
}

size_t PeerConnections::idle() const { return state_->idle.size(); }

std::unique_ptr<TlsStream> PeerConnections::take(const std::string& address) {
  const auto now = std::chrono::steady_clock::now();
  while (auto conn = state_->idle.take(address, now)) {
    if (still_open(tcp_socket(**conn).native_handle())) return std::move(*conn);
    common::log_debug("node={} msg=\"kept connection closed by the node; dropped\"", address);
  }
  return nullptr;
}

void PeerConnections::put(const std::string& address, std::unique_ptr<TlsStream> conn) {
  // The oldest past the bound is returned, and closed as that temporary goes.
  state_->idle.put(address, std::move(conn), std::chrono::steady_clock::now());
  if (!state_->sweeping) {
    state_->sweeping = true;
    asio::co_spawn(state_->timer.get_executor(), sweep(state_), asio::detached);
  }
}

asio::awaitable<void> PeerConnections::sweep(std::shared_ptr<State> state) {
  // New connections expire after the ones kept already: the first expiry never moves earlier.
  while (!state->closed) {
    auto next = state->idle.next_expiry();
    if (!next) break;
    state->timer.expires_at(*next);
    boost::system::error_code ec;
    co_await state->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (state->closed) co_return;
    state->idle.expire(std::chrono::steady_clock::now());  // closed as the returned vector goes
  }
  state->sweeping = false;
}

bool still_open(int fd) {
  char byte;
  ssize_t n;
  while ((n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT)) < 0 && errno == EINTR) {
  }
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

bool idempotent(verb method) {
  switch (method) {
    case verb::get:
    case verb::head:
    case verb::options:
    case verb::trace:
    case verb::put:
    case verb::delete_:
      return true;
    default:
      return false;
  }
}

bool may_retry(verb method, bool sent_whole) { return !sent_whole || idempotent(method); }

bool closed_by_peer(const boost::system::error_code& ec) {
  return ec == error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset ||
         ec == asio::error::broken_pipe || ec == asio::ssl::error::stream_truncated;
}

bool reusable(const response_parser<string_body>& parser, size_t leftover_bytes) {
  // keep_alive() is false for HTTP/1.0 without `Connection: keep-alive`, for `Connection: close`, and
  // whenever the body ends only with the connection (need_eof).
  return parser.is_done() && parser.keep_alive() && leftover_bytes == 0;
}

bool set_user_timeout(int fd, std::chrono::milliseconds after) {
  const auto ms = static_cast<unsigned int>(after.count());
  return ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof ms) == 0;
}

}  // namespace cellgate::http
