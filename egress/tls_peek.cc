// SPDX-License-Identifier: BSD-3-Clause
// tls_peek: reads a tunnel's TLS ClientHello with OpenSSL (no TLS of our own) and checks its SNI.
#include "egress/tls_peek.h"

#include <openssl/err.h>

#include "egress/target.h"

namespace cellgate::egress {
namespace {

// draft-ietf-tls-esni: encrypted_client_hello.
constexpr unsigned kEchExtension = 0xfe0d;

ClientHelloPeek* peek_of(SSL* ssl) { return static_cast<ClientHelloPeek*>(SSL_get_app_data(ssl)); }

int client_hello_cb(SSL* ssl, int* alert, void*) {
  auto* p = peek_of(ssl);
  return p ? p->on_client_hello(ssl, alert) : SSL_CLIENT_HELLO_ERROR;
}

int server_name_cb(SSL* ssl, int* alert, void*) {
  auto* p = peek_of(ssl);
  return p ? p->on_server_name(ssl, alert) : SSL_TLSEXT_ERR_ALERT_FATAL;
}

}  // namespace

SslCtxPtr make_peek_context() {
  SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()));
  if (!ctx) return nullptr;
  // Every version a client may offer is parsed; what it offers is between it and the server.
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_VERSION);
  SSL_CTX_set_client_hello_cb(ctx.get(), client_hello_cb, nullptr);
  SSL_CTX_callback_ctrl(ctx.get(), SSL_CTRL_SET_TLSEXT_SERVERNAME_CB, reinterpret_cast<void (*)()>(server_name_cb));
  return ctx;
}

ClientHelloPeek::ClientHelloPeek(SSL_CTX* ctx, std::string expected, bool ip_target)
    : expected_(std::move(expected)), ip_target_(ip_target) {
  ssl_ = SSL_new(ctx);
  if (ssl_ == nullptr) return;
  in_ = BIO_new(BIO_s_mem());
  out_ = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl_, in_, out_);
  SSL_set_app_data(ssl_, this);
  SSL_set_accept_state(ssl_);
}

ClientHelloPeek::~ClientHelloPeek() {
  if (ssl_ != nullptr) SSL_free(ssl_);
  ERR_clear_error();
}

int ClientHelloPeek::on_client_hello(SSL* ssl, int* alert) {
  int* types = nullptr;
  size_t n = 0;
  if (SSL_client_hello_get1_extensions_present(ssl, &types, &n) == 1) {
    bool ech = false;
    for (size_t i = 0; i < n; ++i) ech = ech || static_cast<unsigned>(types[i]) == kEchExtension;
    OPENSSL_free(types);
    if (ech) {
      decided_ = true;
      reason_ = "the ClientHello uses Encrypted Client Hello, which hides the server name";
      *alert = SSL_AD_ACCESS_DENIED;
      return SSL_CLIENT_HELLO_ERROR;
    }
  }
  return SSL_CLIENT_HELLO_SUCCESS;
}

int ClientHelloPeek::on_server_name(SSL* ssl, int* alert) {
  decided_ = true;
  const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  sni_ = name ? name : "";
  if (ip_target_) {
    accepted_ = sni_.empty();
    if (!accepted_) reason_ = "the TLS server name '" + sni_ + "' is not the CONNECT address " + expected_;
  } else if (sni_.empty()) {
    reason_ = "the TLS ClientHello names no server (SNI), so it cannot be checked against " + expected_;
  } else {
    auto canonical = canonical_host_name(sni_);
    accepted_ = canonical && *canonical == expected_;
    if (!accepted_) reason_ = "the TLS server name '" + (canonical ? *canonical : std::string("?")) + "' is not the CONNECT host " + expected_;
  }
  // Either way the handshake stops here: this object only reads. A refusal answers the client
  // with OpenSSL's access_denied alert (alert_bytes); an acceptance's output is thrown away.
  *alert = accepted_ ? SSL_AD_INTERNAL_ERROR : SSL_AD_ACCESS_DENIED;
  return SSL_TLSEXT_ERR_ALERT_FATAL;
}

ClientHelloPeek::Outcome ClientHelloPeek::feed(const void* data, size_t size) {
  if (ssl_ == nullptr) {
    reason_ = "out of memory";
    return Outcome::kNotTls;
  }
  if (size > 0 && BIO_write(in_, data, static_cast<int>(size)) != static_cast<int>(size)) {
    reason_ = "out of memory";
    return Outcome::kNotTls;
  }
  int rc = SSL_do_handshake(ssl_);
  int err = SSL_get_error(ssl_, rc);
  ERR_clear_error();
  if (decided_) return accepted_ ? Outcome::kAccepted : Outcome::kRefused;
  if (rc <= 0 && err == SSL_ERROR_WANT_READ) return Outcome::kNeedMore;
  reason_ = "the tunnel does not start with a TLS ClientHello";
  return Outcome::kNotTls;
}

std::string ClientHelloPeek::alert_bytes() {
  std::string out;
  char buf[512];
  int n;
  while (out_ != nullptr && (n = BIO_read(out_, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

}  // namespace cellgate::egress
