// SPDX-License-Identifier: BSD-3-Clause
// tls: the two connection stream types (plain TCP, TLS over TCP) and the server's OpenSSL context.
#pragma once

#include <memory>
#include <string>

#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

namespace cellgate::http {

// Every connection is one of these; the session code is a template over the two, instantiated in
// each file that needs them (no type erasure on the per-byte path).
using PlainStream = boost::beast::tcp_stream;
using TlsStream = boost::beast::ssl_stream<boost::beast::tcp_stream>;

// The TCP socket under either stream.
inline boost::asio::ip::tcp::socket& tcp_socket(PlainStream& s) { return s.socket(); }
inline boost::asio::ip::tcp::socket& tcp_socket(TlsStream& s) { return s.next_layer().socket(); }

// A TLS 1.2+ server context with the PEM certificate chain and private key. Throws ConfigError with
// one line naming the file when either cannot be read or parsed, or when they do not match.
std::unique_ptr<boost::asio::ssl::context> make_tls_context(const std::string& certfile, const std::string& keyfile);

// The first bytes of a plain-HTTP request (a method name) sent to the TLS port.
bool looks_like_plain_http(std::string_view first_bytes);

}  // namespace cellgate::http
