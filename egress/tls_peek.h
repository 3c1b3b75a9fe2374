// SPDX-License-Identifier: BSD-3-Clause
// tls_peek: reads a tunnel's TLS ClientHello with OpenSSL (no TLS of our own) and checks its SNI.
#pragma once

#include <openssl/ssl.h>

#include <cstddef>
#include <memory>
#include <string>

namespace cellgate::egress {

struct SslCtxFree {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};
using SslCtxPtr = std::unique_ptr<SSL_CTX, SslCtxFree>;

// The context every ClientHelloPeek uses (a server context without certificates: the handshake
// always stops at the ClientHello). Errors: nullptr.
SslCtxPtr make_peek_context();

// Feeds the first bytes a client sends into a tunnel to an OpenSSL server object over memory BIOs.
// OpenSSL parses the ClientHello; its callbacks compare the SNI with the CONNECT host:
//  - a host name target: the SNI must be present and equal to it (no domain fronting by SNI);
//  - an IP literal target: there must be no SNI (a name would front for another host);
//  - a ClientHello that offers Encrypted Client Hello is refused (the real name would be hidden).
class ClientHelloPeek {
 public:
  enum class Outcome { kNeedMore, kAccepted, kRefused, kNotTls };
  // expected: the canonical CONNECT host; ip_target: it is an IP literal.
  ClientHelloPeek(SSL_CTX* ctx, std::string expected, bool ip_target);
  ~ClientHelloPeek();
  ClientHelloPeek(const ClientHelloPeek&) = delete;
  ClientHelloPeek& operator=(const ClientHelloPeek&) = delete;

  // Appends bytes and runs the parse; kNeedMore until a whole ClientHello arrived. Bytes are only
  // inspected: the caller keeps and forwards them.
  Outcome feed(const void* data, size_t size);
  const std::string& reason() const { return reason_; }       // why kRefused / kNotTls
  const std::string& server_name() const { return sni_; }     // as sent ("" when absent)
  // What OpenSSL wrote in answer (a TLS alert: access_denied): sent to the client on a refusal.
  std::string alert_bytes();

  // For OpenSSL's callbacks.
  int on_client_hello(SSL* ssl, int* alert);
  int on_server_name(SSL* ssl, int* alert);

 private:
  SSL* ssl_ = nullptr;
  BIO* in_ = nullptr;   // owned by ssl_
  BIO* out_ = nullptr;  // owned by ssl_
  std::string expected_;
  bool ip_target_;
  bool decided_ = false;
  bool accepted_ = false;
  std::string reason_;
  std::string sni_;
};

}  // namespace cellgate::egress
