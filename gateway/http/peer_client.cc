// SPDX-License-Identifier: BSD-3-Clause
// peer_client: requests and kernel WebSockets to another node, over mutual TLS.
#include "gateway/http/peer_client.h"

#include <cerrno>
#include <optional>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket.hpp>
#include <fmt/core.h>

#include "common/log.h"
#include "protocol/ws_codec.h"

namespace cellgate::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
using asio::awaitable;
using common::Errc;
using common::make_error;

namespace {

common::Error failed(const std::string& address, const char* what, const boost::system::error_code& ec) {
  const Errc code = ec == beast::error::timeout ? Errc::kTimeout : Errc::kUnavailable;
  return make_error(code, fmt::format("node at {} {}: {}", address, what, ec.message()));
}

}  // namespace

void strip_hop_by_hop(fields& h) {
  for (auto f : {field::connection, field::keep_alive, field::proxy_authenticate, field::proxy_authorization, field::te,
                 field::trailer, field::transfer_encoding, field::upgrade, field::content_length})
    h.erase(f);
  h.erase("X-Forwarded-For");
}

awaitable<common::Result<std::unique_ptr<TlsStream>>> PeerClient::connect(const std::string& address, bool kept) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) co_return make_error(Errc::kInternal, "a node address is host:port, got " + address);
  std::string host = address.substr(0, colon);
  if (host.size() > 1 && host.front() == '[') host = host.substr(1, host.size() - 2);
  const std::string port = address.substr(colon + 1);
  auto ex = co_await asio::this_coro::executor;
  boost::system::error_code ec;
  asio::ip::tcp::resolver resolver(ex);
  auto endpoints = co_await resolver.async_resolve(host, port, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return failed(address, "cannot be resolved", ec);
  auto stream = std::make_unique<TlsStream>(ex, *ctx_);
  auto& tcp = beast::get_lowest_layer(*stream);
  tcp.expires_after(timeout_);
  co_await tcp.async_connect(endpoints, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return failed(address, "cannot be reached", ec);
  tcp.socket().set_option(asio::ip::tcp::no_delay(true), ec);
  // A kept connection to a node cut off since fails as fast as a new one would: without this, a request
  // written to it waits for TCP's retransmissions (minutes) or the answer's deadline.
  if (kept && !set_user_timeout(tcp.socket().native_handle(), timeout_))
    common::log_debug("node={} msg=\"TCP_USER_TIMEOUT refused\" errno={}", address, errno);
  if (!cluster_client_verify(*stream, host)) co_return make_error(Errc::kInternal, "cannot verify node name " + host);
  co_await stream->async_handshake(asio::ssl::stream_base::client, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return failed(address, "refused the TLS handshake", ec);
  co_return std::move(stream);
}

struct PeerClient::Exchange {
  std::optional<Response> res;
  bool reusable = false;     // res was read whole and its connection may carry another request
  bool sent_whole = false;   // the request was written whole
  bool peer_closed = false;  // the node closed the connection before the response's first byte
  common::Error error;
};

awaitable<PeerClient::Exchange> PeerClient::exchange(TlsStream& s, Request& req, const std::string& address,
                                                     uint64_t max_body) {
  Exchange out;
  boost::system::error_code ec;
  beast::get_lowest_layer(s).expires_after(timeout_);
  co_await beast::http::async_write(s, req, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    out.peer_closed = closed_by_peer(ec);
    out.error = failed(address, "cannot be sent the request", ec);
    co_return out;
  }
  out.sent_whole = true;
  // The answer may take as long as the request's work there (a kernel start, an execute): bounded by
  // that node's own limits, and by the kernel start timeout here.
  beast::get_lowest_layer(s).expires_after(timeout_ * 10);
  beast::flat_buffer buffer;
  response_parser<string_body> parser;
  parser.body_limit(max_body);
  parser.header_limit(64 * 1024);
  // A response to HEAD has the headers of a GET's and no body (RFC 9110 9.3.2).
  if (req.method() == verb::head) parser.skip(true);
  co_await beast::http::async_read(s, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    out.peer_closed = !parser.got_some() && buffer.size() == 0 && closed_by_peer(ec);
    out.error = failed(address, "sent no complete answer", ec);
    co_return out;
  }
  beast::get_lowest_layer(s).expires_never();
  out.reusable = reusable(parser, buffer.size());
  out.res = parser.release();
  co_return out;
}

awaitable<common::Result<Response>> PeerClient::forward(Request req, std::string address, std::string client_ip,
                                                        uint64_t max_body) {
  const unsigned version = req.version();
  const bool keep_alive = req.keep_alive();
  strip_hop_by_hop(req);
  req.set("X-Forwarded-For", client_ip);
  req.version(11);
  req.keep_alive(true);
  req.prepare_payload();
  std::unique_ptr<TlsStream> stream = kept_.take(address);
  bool reused = stream != nullptr;
  for (;;) {
    if (!stream) {
      auto fresh = co_await connect(address, true);
      if (!fresh) co_return fresh.error();
      stream = std::move(fresh.value());
    }
    Exchange ex = co_await exchange(*stream, req, address, max_body);
    if (!ex.res) {
      stream.reset();  // closed: whatever it carried is no longer known
      // The node closed a kept connection between requests (it restarted, or closed it idle): once more
      // on a new connection, if the request cannot have been acted on or may be repeated.
      if (reused && ex.peer_closed && may_retry(req.method(), ex.sent_whole)) {
        common::log_debug("node={} msg=\"kept connection closed by the node; sending again\" sent_whole={}", address,
                          ex.sent_whole);
        reused = false;
        continue;
      }
      co_return ex.error;
    }
    if (ex.reusable) kept_.put(address, std::move(stream));
    Response res = std::move(*ex.res);
    const std::string length(res[field::content_length]);
    strip_hop_by_hop(res);
    res.version(version);
    res.keep_alive(keep_alive);
    res.prepare_payload();
    if (req.method() == verb::head && !length.empty()) res.set(field::content_length, length);  // the GET's
    co_return res;
  }
}

awaitable<common::Result<std::unique_ptr<PeerWebSocket>>> PeerClient::open_ws(const Request& req, std::string address,
                                                                              std::string client_ip,
                                                                              uint64_t max_message) {
  auto stream = co_await connect(address, false);
  if (!stream) co_return stream.error();
  auto ws = std::make_unique<PeerWebSocket>(std::move(**stream));
  ws->read_message_max(max_message);
  const std::string auth(req[field::authorization]);
  const std::string origin(req[field::origin]);
  // The client's Host too: the owner's same-origin check then judges what the receiving node judged.
  const std::string host(req[field::host]);
  ws->set_option(beast::websocket::stream_base::decorator([auth, origin, host, client_ip](beast::websocket::request_type& up) {
    if (!auth.empty()) up.set(field::authorization, auth);
    if (!host.empty()) up.set(field::host, host);
    if (!origin.empty()) up.set(field::origin, origin);
    up.set(field::sec_websocket_protocol, std::string(protocol::kV1Subprotocol));
    up.set("X-Forwarded-For", client_ip);
  }));
  const auto colon = address.rfind(':');
  boost::system::error_code ec;
  beast::get_lowest_layer(*ws).expires_after(timeout_);
  beast::websocket::response_type res;
  co_await ws->async_handshake(res, address.substr(0, colon), std::string(req.target()),
                               asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    if (res.result_int() >= 400)
      co_return make_error(res.result_int() == 404 ? Errc::kNotFound : Errc::kUnavailable,
                           fmt::format("node at {} refused the kernel WebSocket: {}", address, res.result_int()));
    co_return failed(address, "refused the WebSocket", ec);
  }
  beast::get_lowest_layer(*ws).expires_never();
  beast::websocket::stream_base::timeout opt{};
  opt.handshake_timeout = timeout_;
  opt.idle_timeout = std::chrono::seconds(30);
  opt.keep_alive_pings = true;  // a node cut off is noticed within the idle timeout
  ws->set_option(opt);
  ws->binary(true);
  co_return std::move(ws);
}

}  // namespace cellgate::http
