// SPDX-License-Identifier: BSD-3-Clause
// peer_client: requests and kernel WebSockets to another node, over mutual TLS.
#include "gateway/http/peer_client.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket.hpp>
#include <fmt/core.h>

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

awaitable<common::Result<std::unique_ptr<TlsStream>>> PeerClient::connect(const std::string& address) {
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
  if (!cluster_client_verify(*stream, host)) co_return make_error(Errc::kInternal, "cannot verify node name " + host);
  co_await stream->async_handshake(asio::ssl::stream_base::client, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return failed(address, "refused the TLS handshake", ec);
  co_return std::move(stream);
}

awaitable<common::Result<Response>> PeerClient::forward(Request req, std::string address, std::string client_ip,
                                                        uint64_t max_body) {
  auto stream = co_await connect(address);
  if (!stream) co_return stream.error();
  auto& s = **stream;
  const unsigned version = req.version();
  const bool keep_alive = req.keep_alive();
  strip_hop_by_hop(req);
  req.set("X-Forwarded-For", client_ip);
  req.version(11);
  req.keep_alive(false);
  req.prepare_payload();
  boost::system::error_code ec;
  beast::get_lowest_layer(s).expires_after(timeout_);
  co_await beast::http::async_write(s, req, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return failed(address, "cannot be sent the request", ec);
  // The answer may take as long as the request's work there (a kernel start, an execute): bounded by
  // that node's own limits, and by the kernel start timeout here.
  beast::get_lowest_layer(s).expires_after(timeout_ * 10);
  beast::flat_buffer buffer;
  response_parser<string_body> parser;
  parser.body_limit(max_body);
  parser.header_limit(64 * 1024);
  co_await beast::http::async_read(s, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return failed(address, "sent no complete answer", ec);
  Response res = parser.release();
  strip_hop_by_hop(res);
  res.version(version);
  res.keep_alive(keep_alive);
  res.prepare_payload();
  // The connection is not reused: a close_notify is polite, not needed (the body was framed).
  beast::get_lowest_layer(s).socket().close(ec);
  co_return res;
}

awaitable<common::Result<std::unique_ptr<PeerWebSocket>>> PeerClient::open_ws(const Request& req, std::string address,
                                                                              std::string client_ip,
                                                                              uint64_t max_message) {
  auto stream = co_await connect(address);
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
