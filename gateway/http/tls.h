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

// The cluster's internal connections (docs/cluster.md): TLS 1.3 only, both ends present a certificate
// (cert, key) and accept only a peer whose chain ends at the cluster CA (ca). The server side requires a
// client certificate; the client side also checks that the server's certificate names the host it
// dialled (cluster_client_verify). Throw ConfigError with one line naming the bad file.
std::unique_ptr<boost::asio::ssl::context> make_cluster_server_context(const std::string& cert, const std::string& key,
                                                                       const std::string& ca);
std::unique_ptr<boost::asio::ssl::context> make_cluster_client_context(const std::string& cert, const std::string& key,
                                                                       const std::string& ca);
// Before a client handshake: SNI, and the host (a DNS name or an IP address) the server's certificate
// must name. False when host is unusable.
bool cluster_client_verify(TlsStream& stream, const std::string& host);
// After a handshake that verified the peer: its certificate's common name (else its first DNS name);
// "" when there is none.
std::string peer_certificate_name(TlsStream& stream);

// The first bytes of a plain-HTTP request (a method name) sent to the TLS port.
bool looks_like_plain_http(std::string_view first_bytes);

}  // namespace cellgate::http
