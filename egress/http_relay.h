// SPDX-License-Identifier: BSD-3-Clause
// http_relay: the proxy's HTTP vocabulary — stream types, deadlines, refusals, hop-by-hop headers.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

namespace cellgate::egress {

namespace http = boost::beast::http;
// TLS over a tcp_stream the session keeps (so a cut can close the socket underneath).
using TlsStream = boost::asio::ssl::stream<boost::beast::tcp_stream&>;
using RequestParser = http::request_parser<http::buffer_body>;
// The byte caps bound bodies, not the parser. Not boost::none: Beast 1.74 compares a Content-Length
// with an empty optional as "greater" (basic_parser.ipp) and refuses every sized body.
inline constexpr std::uint64_t kNoBodyLimit = ~std::uint64_t{0};
using ResponseParser = http::response_parser<http::buffer_body>;

inline void set_expiry(boost::beast::tcp_stream& s, std::chrono::milliseconds d) { s.expires_after(d); }
inline void set_expiry(TlsStream& s, std::chrono::milliseconds d) { s.next_layer().expires_after(d); }

// The proxy's own answer: `status` with the reason phrase "cellgate egress: <reason>" (what requests
// and urllib print), the same line as a text/plain body (what curl prints), and Connection: close.
http::response<http::string_body> refusal_response(http::status status, const std::string& reason);

template <class Stream>
boost::asio::awaitable<void> write_refusal(Stream& s, http::status status, const std::string& reason) {
  namespace asio = boost::asio;
  auto res = refusal_response(status, reason);
  boost::system::error_code ec;
  set_expiry(s, std::chrono::seconds(10));
  co_await http::async_write(s, res, asio::redirect_error(asio::use_awaitable, ec));
}

// Removes the hop-by-hop headers (RFC 9110 7.6.1: Connection and the names it lists, Keep-Alive,
// Proxy-*, TE, Upgrade unless `keep_upgrade`) and Expect; returns whether the client asked for
// 100-continue (the proxy answers that itself).
bool strip_hop_by_hop(http::request_header<>& h, bool keep_upgrade);

// "http://host:port/path?q" → ("host:port", "/path?q"); false when it is not an http absolute-form.
bool split_absolute_form(std::string_view target, std::string& authority, std::string& origin_form);

}  // namespace cellgate::egress
