// SPDX-License-Identifier: BSD-3-Clause
// session: one connection's HTTP/1.1 request loop.
#include "gateway/http/session.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <type_traits>
#include <variant>

#include <fmt/core.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include "common/log.h"
#include "gateway/http/tls.h"

namespace cellgate::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
using asio::awaitable;
using asio::ip::tcp;

namespace {

constexpr auto kIdleTimeout = std::chrono::seconds(60);       // a kept-alive connection's wait for its next request
constexpr auto kHeaderTimeout = std::chrono::seconds(10);     // a request's first byte to its last header line
constexpr auto kReadTimeout = std::chrono::seconds(60);       // a request's first byte to its last body byte
constexpr auto kHandshakeTimeout = std::chrono::seconds(10);  // TCP accept to TLS established
constexpr auto kTlsShutdownTimeout = std::chrono::seconds(2);
constexpr auto kWriteTimeout = std::chrono::seconds(60);       // each piece of a response must leave within this
constexpr size_t kFilePiece = 256 * 1024;

// True unless the request has no Transfer-Encoding or exactly "chunked", the one coding Beast decodes.
// With any other, the body is either unframed (chunked not last: RFC 9112 6.3 says 400 and close, or
// the rest is read as the next request) or still encoded.
bool unsupported_transfer_coding(const Request& req) {
  size_t fields = req.count(http::field::transfer_encoding);
  if (fields == 0) return false;
  if (fields > 1) return true;
  http::token_list codings{req[http::field::transfer_encoding]};
  size_t n = 0;
  bool chunked = false;
  for (const auto& c : codings) {
    ++n;
    chunked = beast::iequals(c, "chunked");
  }
  return !(n == 1 && chunked);
}

// The head, then the file in pieces read as they are written. False when the response could not be
// sent whole: after the head, an error can only be told by closing the connection (RFC 9112 8: an
// incomplete message).
template <class Stream>
awaitable<bool> write_file_reply(Stream& stream, Response& head, const FileBody& file) {
  boost::system::error_code ec;
  auto& lowest = beast::get_lowest_layer(stream);
  lowest.expires_after(kWriteTimeout);
  http::response_serializer<http::string_body> sr{head};
  co_await http::async_write_header(stream, sr, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return false;
  std::unique_ptr<char[]> piece(new char[kFilePiece]);
  for (uint64_t offset = 0; offset < file.size;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(kFilePiece, file.size - offset));
    const ssize_t n = ::pread(file.fd.get(), piece.get(), want, static_cast<off_t>(file.offset + offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      common::log_warn("msg=\"response body file unreadable; closing the connection\" error=\"{}\"",
                       n < 0 ? std::strerror(errno) : "shorter than its Content-Length");
      co_return false;
    }
    lowest.expires_after(kWriteTimeout);
    co_await asio::async_write(stream, asio::buffer(piece.get(), static_cast<size_t>(n)),
                               asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return false;
    offset += static_cast<uint64_t>(n);
  }
  co_return true;
}

// The head, then the chunks as the source makes them, then the last chunk. False when the reply could
// not be sent whole (the client went away): the connection then closes.
template <class Stream>
awaitable<bool> write_chunked_reply(Stream& stream, Response& head, ChunkSource& chunks) {
  boost::system::error_code ec;
  auto& lowest = beast::get_lowest_layer(stream);
  head.chunked(true);
  response_serializer<string_body> sr{head};
  lowest.expires_after(kWriteTimeout);
  co_await http::async_write_header(stream, sr, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return false;
  for (;;) {
    lowest.expires_never();  // the source takes as long as the work it reports
    std::optional<std::string> piece = co_await chunks.next();
    if (!piece) break;
    // Each piece must leave in time, as any response's: a client that stops reading is closed
    // rather than holding the connection (and what the source keeps for it) for ever.
    lowest.expires_after(kWriteTimeout);
    // Named, not a temporary in the co_await operand: GCC 12 can destroy such temporaries twice.
    auto chunk = make_chunk(asio::buffer(*piece));
    co_await asio::async_write(stream, chunk, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      if (ec == beast::error::timeout)
        common::log_warn("msg=\"streaming client did not read for {} s; closing\"", kWriteTimeout.count());
      co_return false;
    }
  }
  lowest.expires_after(kWriteTimeout);
  auto last = make_chunk_last();
  co_await asio::async_write(stream, last, asio::redirect_error(asio::use_awaitable, ec));
  co_return !ec;
}

// An upgrade request: the handler's refusal is written and the connection closed; an accepted one
// becomes a WebSocket connection that serves until it ends.
template <class Stream>
awaitable<void> serve_upgrade(Stream stream, Request req, Handler& handler, Peer peer) {
  Upgrade decision = co_await handler.upgrade(req, std::move(peer));
  if (auto* refusal = std::get_if<Response>(&decision)) {
    refusal->keep_alive(false);
    boost::system::error_code ec;
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(10));
    co_await http::async_write(stream, *refusal, asio::redirect_error(asio::use_awaitable, ec));
    tcp_socket(stream).shutdown(tcp::socket::shutdown_send, ec);
    co_return;
  }
  WsAccept accepted = std::move(std::get<WsAccept>(decision));
  auto connection = std::make_shared<WsConnection<Stream>>(typename WsConnection<Stream>::Ws(std::move(stream)),
                                                           std::move(accepted.endpoint),
                                                           std::move(accepted.session_id), accepted.protocol,
                                                           accepted.limits);
  connection->identify(std::move(accepted.user), std::move(accepted.client));
  const boost::system::error_code ended = co_await connection->run(std::move(req));
  if (ended == boost::beast::websocket::error::message_too_big) handler.refused(Refusal::kMessageTooBig);
  // accepted.lease goes now, when the connection's read loop has ended.
}

template <class Stream>
awaitable<void> serve_requests(Stream& stream, Handler& handler, Limits limits, std::string peer_ip,
                               std::string cluster_peer = {}) {
  boost::system::error_code ec;
  beast::flat_buffer buffer;
  auto& lowest = beast::get_lowest_layer(stream);
  for (;;) {
    request_parser<string_body> parser;
    parser.header_limit(static_cast<uint32_t>(limits.max_header_bytes));
    parser.body_limit(limits.max_body_bytes);
    if (buffer.size() == 0) {
      // Between requests a connection may idle; once a request's first byte is in, its header has
      // kHeaderTimeout and the whole request kReadTimeout: a client trickling a header (slowloris)
      // holds its connection for seconds, not minutes.
      lowest.expires_after(kIdleTimeout);
      const size_t n =
          co_await stream.async_read_some(buffer.prepare(4096), asio::redirect_error(asio::use_awaitable, ec));
      if (ec) break;
      buffer.commit(n);
    }
    const auto first_byte = std::chrono::steady_clock::now();
    lowest.expires_after(kHeaderTimeout);
    co_await http::async_read_header(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
    if (!ec && !parser.is_done()) {
      const auto length = parser.content_length();
      const bool large = parser.chunked() || (length && *length > limits.unauthenticated_body_bytes);
      bool may_send = true;
      if (large) {
        const Peer asking{peer_ip, lowest.socket().native_handle()};
        may_send = co_await handler.may_send_large_body(parser.get(), asking);
      }
      if (!may_send) {
        Request bad{verb::post, "/", 11};
        auto res = error_response(bad, common::Errc::kUnauthorized,
                                  fmt::format("missing or invalid token: a request body over {} bytes is read only "
                                              "with a valid token", limits.unauthenticated_body_bytes));
        res.keep_alive(false);
        lowest.expires_after(std::chrono::seconds(5));
        co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
        break;
      }
    }
    if (!ec && !parser.is_done()) {
      lowest.expires_at(first_byte + kReadTimeout);
      co_await http::async_read(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
    }
    if (ec == beast::error::timeout) {
      common::log_debug("ip={} msg=\"request not received in time; closing\"", peer_ip);
      break;
    }
    if (ec == error::end_of_stream || ec == asio::error::eof) break;
    const bool bad_coding = !ec && unsupported_transfer_coding(parser.get());
    // RFC 9112 3.2: a server MUST answer 400 to an HTTP/1.1 request without exactly one Host field.
    const bool bad_host = !ec && parser.get().version() == 11 && parser.get().count(field::host) != 1;
    if (ec || bad_coding || bad_host) {
      // Malformed or oversized: say so once, then close (the stream position is unknown).
      Request bad{verb::get, "/", 11};
      bool too_large = ec == error::body_limit || ec == error::header_limit;
      std::string why = bad_host                        ? "malformed HTTP request: HTTP/1.1 needs exactly one Host header"
                        : bad_coding                    ? "malformed HTTP request: Transfer-Encoding other than chunked"
                        : ec == error::header_limit     ? "request headers larger than --max-header"
                        : too_large                     ? "request body larger than --max-body"
                                                        : "malformed HTTP request: " + ec.message();
      auto res = error_response(bad, too_large ? common::Errc::kTooLarge : common::Errc::kBadRequest, why);
      if (ec == error::header_limit) res.result(status::request_header_fields_too_large);
      if (ec == error::header_limit) handler.refused(Refusal::kHeaderTooLarge);
      else if (ec == error::body_limit) handler.refused(Refusal::kBodyTooLarge);
      res.keep_alive(false);
      lowest.expires_after(std::chrono::seconds(5));
      co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
      break;
    }
    Request req = parser.release();
    Peer peer{peer_ip, lowest.socket().native_handle(), cluster_peer};
    lowest.expires_never();  // handlers may wait for a kernel to start
    if (beast::websocket::is_upgrade(req)) {
      co_await serve_upgrade(std::move(stream), std::move(req), handler, std::move(peer));
      co_return;
    }
    const bool head = req.method() == verb::head;
    Reply reply = co_await handler.handle(std::move(req), std::move(peer));
    Response& res = reply.res;
    if (head) {
      // A response to HEAD ends with its headers (RFC 9110 9.3.2): a body here would be read as the
      // start of the next response on this connection. Content-Length stays that of the GET.
      res.body().clear();
      reply.file.reset();
      reply.chunks.reset();
    }
    bool keep = res.keep_alive();
    if (reply.chunks) {
      keep = co_await write_chunked_reply(stream, res, *reply.chunks) && keep;
      reply.chunks.reset();
      if (!keep) break;
      continue;
    }
    if (reply.file) {
      keep = co_await write_file_reply(stream, res, *reply.file) && keep;
      reply.file.reset();  // the staged file goes now, not when the connection's next request arrives
      if (!keep) break;
      continue;
    }
    lowest.expires_after(kWriteTimeout);
    co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
    if (ec || !keep) break;
  }
  if constexpr (std::is_same_v<Stream, TlsStream>) {
    // close_notify, bounded: a peer that never answers it does not hold the coroutine.
    lowest.expires_after(kTlsShutdownTimeout);
    co_await stream.async_shutdown(asio::redirect_error(asio::use_awaitable, ec));
  }
  tcp_socket(stream).shutdown(tcp::socket::shutdown_send, ec);
}

std::string peer_of(tcp::socket& socket) {
  boost::system::error_code ec;
  auto ep = socket.remote_endpoint(ec);
  return ec ? std::string() : ep.address().to_string();
}

}  // namespace

awaitable<void> plain_session(tcp::socket socket, Handler& handler, Limits limits) {
  PlainStream stream(std::move(socket));
  boost::system::error_code ec;
  // Nagle adds ~40 ms to small request/response pairs (measured against jupyter_server).
  stream.socket().set_option(tcp::no_delay(true), ec);
  std::string peer = peer_of(stream.socket());
  co_await serve_requests(stream, handler, limits, std::move(peer));
}

awaitable<void> tls_session(tcp::socket socket, Handler& handler, Limits limits, asio::ssl::context& ctx,
                            bool cluster) {
  TlsStream stream(std::move(socket), ctx);
  boost::system::error_code ec;
  auto& raw = stream.next_layer();
  raw.socket().set_option(tcp::no_delay(true), ec);
  std::string peer = peer_of(raw.socket());
  // The first bytes decide: a ClientHello goes on to the handshake (with them), plain HTTP gets a
  // plain-text 400 rather than a connection that just drops.
  std::array<char, 16> first{};
  raw.expires_after(kHandshakeTimeout);
  size_t n = co_await raw.async_read_some(asio::buffer(first), asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return;
  if (looks_like_plain_http(std::string_view(first.data(), n))) {
    Request bad{verb::get, "/", 11};
    auto res = error_response(bad, common::Errc::kBadRequest, "this port speaks HTTPS; use https:// (and wss://)");
    res.keep_alive(false);
    res.set(field::server, "cellgate");
    co_await http::async_write(raw, res, asio::redirect_error(asio::use_awaitable, ec));
    raw.socket().shutdown(tcp::socket::shutdown_both, ec);
    co_return;
  }
  co_await stream.async_handshake(asio::ssl::stream_base::server, asio::buffer(first.data(), n),
                                  asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    // A refused cluster peer is worth an operator's attention (a certificate of the wrong CA, an
    // expired one), but at most once every 10 s: anyone who reaches the port can make refusals.
    static auto last_warned = std::chrono::steady_clock::time_point{};
    const auto now = std::chrono::steady_clock::now();
    if (cluster && now - last_warned > std::chrono::seconds(10)) {
      last_warned = now;
      common::log_warn("ip={} msg=\"cluster peer refused at the TLS handshake\" error=\"{}\"", peer, ec.message());
    } else {
      common::log_debug("ip={} msg=\"TLS handshake failed\" error=\"{}\"", peer, ec.message());
    }
    co_return;
  }
  std::string node;
  if (cluster) {
    // The context required a certificate of the cluster CA; the handshake has verified it.
    node = peer_certificate_name(stream);
    if (node.empty()) co_return;
  }
  co_await serve_requests(stream, handler, limits, std::move(peer), std::move(node));
}

bool Peer::gone() const {
  if (fd < 0) return false;
  char byte;
  ssize_t n;
  while ((n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT)) < 0 && errno == EINTR) {
  }
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

}  // namespace cellgate::http
