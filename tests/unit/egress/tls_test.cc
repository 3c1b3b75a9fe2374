// SPDX-License-Identifier: BSD-3-Clause
// tls: the ClientHello check (SNI against the CONNECT host) and the interception CA, with OpenSSL
// clients talking to the proxy's contexts over memory BIOs.
#include <catch2/catch.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "egress/cert_authority.h"
#include "egress/tls_contexts.h"
#include "egress/tls_peek.h"

using namespace cellgate::egress;

namespace {

// A client's first flight: the ClientHello it would send, naming `sni` (none when empty).
std::string client_hello(const std::string& sni) {
  SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  SSL* ssl = SSL_new(ctx.get());
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl, in, out);
  if (!sni.empty()) SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, const_cast<char*>(sni.c_str()));
  SSL_set_connect_state(ssl);
  SSL_do_handshake(ssl);
  std::string bytes;
  char buf[4096];
  int n;
  while ((n = BIO_read(out, buf, sizeof buf)) > 0) bytes.append(buf, static_cast<size_t>(n));
  SSL_free(ssl);
  ERR_clear_error();
  return bytes;
}

ClientHelloPeek::Outcome peek_all(ClientHelloPeek& p, const std::string& bytes, size_t step) {
  auto o = ClientHelloPeek::Outcome::kNeedMore;
  for (size_t at = 0; at < bytes.size() && o == ClientHelloPeek::Outcome::kNeedMore; at += step)
    o = p.feed(bytes.data() + at, std::min(step, bytes.size() - at));
  return o;
}

// Moves bytes between a client and a server SSL until both stop making progress.
void pump(SSL* client, SSL* server) {
  for (int i = 0; i < 50; ++i) {
    SSL_do_handshake(client);
    SSL_do_handshake(server);
    char buf[16384];
    int n;
    bool moved = false;
    while ((n = BIO_read(SSL_get_wbio(client), buf, sizeof buf)) > 0) {
      BIO_write(SSL_get_rbio(server), buf, n);
      moved = true;
    }
    while ((n = BIO_read(SSL_get_wbio(server), buf, sizeof buf)) > 0) {
      BIO_write(SSL_get_rbio(client), buf, n);
      moved = true;
    }
    if (!moved) break;
  }
}

SSL* mem_ssl(SSL_CTX* ctx) {
  SSL* s = SSL_new(ctx);
  SSL_set_bio(s, BIO_new(BIO_s_mem()), BIO_new(BIO_s_mem()));
  return s;
}

}  // namespace

TEST_CASE("a ClientHello whose SNI is the CONNECT host passes, in any fragmentation", "[egress]") {
  SslCtxPtr ctx = make_peek_context();
  REQUIRE(ctx);
  const std::string hello = client_hello("api.example.com");
  for (size_t step : {hello.size(), size_t{1}, size_t{7}, size_t{100}}) {
    ClientHelloPeek p(ctx.get(), "api.example.com", false);
    CHECK(peek_all(p, hello, step) == ClientHelloPeek::Outcome::kAccepted);
    CHECK(p.server_name() == "api.example.com");
  }
  ClientHelloPeek upper(ctx.get(), "api.example.com", false);
  CHECK(peek_all(upper, client_hello("API.Example.com."), 64) == ClientHelloPeek::Outcome::kAccepted);
}

TEST_CASE("another SNI, no SNI, or not TLS at all is refused", "[egress]") {
  SslCtxPtr ctx = make_peek_context();
  ClientHelloPeek fronted(ctx.get(), "allowed.example.com", false);
  CHECK(peek_all(fronted, client_hello("blocked.example.org"), 50) == ClientHelloPeek::Outcome::kRefused);
  CHECK(fronted.reason() == "the TLS server name 'blocked.example.org' is not the CONNECT host allowed.example.com");
  std::string alert = fronted.alert_bytes();
  REQUIRE(alert.size() >= 7);
  CHECK(static_cast<unsigned char>(alert[0]) == 21);  // a TLS alert record …
  CHECK(static_cast<unsigned char>(alert[6]) == SSL_AD_ACCESS_DENIED);  // … access_denied
  ClientHelloPeek nameless(ctx.get(), "allowed.example.com", false);
  CHECK(peek_all(nameless, client_hello(""), 50) == ClientHelloPeek::Outcome::kRefused);
  ClientHelloPeek plain(ctx.get(), "allowed.example.com", false);
  CHECK(plain.feed("GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27) == ClientHelloPeek::Outcome::kNotTls);
  // An IP literal target: a name in the SNI would front for some host; no SNI is right.
  ClientHelloPeek ip(ctx.get(), "203.0.113.5", true);
  CHECK(peek_all(ip, client_hello(""), 50) == ClientHelloPeek::Outcome::kAccepted);
  ClientHelloPeek ip_named(ctx.get(), "203.0.113.5", true);
  CHECK(peek_all(ip_named, client_hello("example.com"), 50) == ClientHelloPeek::Outcome::kRefused);
}

TEST_CASE("the CA is created once, kept private, and its leaves verify for their host only", "[egress]") {
  char dir[] = "/tmp/egress-ca-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string ca_dir = std::string(dir) + "/ca";
  auto ca = CertAuthority::open(ca_dir, "/nonexistent-bundle");
  REQUIRE(ca);
  struct stat st {};
  REQUIRE(::stat((ca_dir + "/ca.key").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  REQUIRE(::stat(ca_dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  auto again = CertAuthority::open(ca_dir, "/nonexistent-bundle");
  REQUIRE(again);
  CHECK(X509_cmp((*ca)->certificate(), (*again)->certificate()) == 0);

  X509* leaf = (*ca)->leaf_for("api.example.com");
  REQUIRE(leaf != nullptr);
  CHECK((*ca)->leaf_for("api.example.com") == leaf);  // cached
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, (*ca)->certificate());
  auto verify = [&](const char* host) {
    X509_STORE_CTX* ctx = X509_STORE_CTX_new();
    X509_STORE_CTX_init(ctx, store, leaf, nullptr);
    X509_VERIFY_PARAM_set1_host(X509_STORE_CTX_get0_param(ctx), host, 0);
    X509_VERIFY_PARAM_set_purpose(X509_STORE_CTX_get0_param(ctx), X509_PURPOSE_SSL_SERVER);
    X509_VERIFY_PARAM_set_flags(X509_STORE_CTX_get0_param(ctx), X509_V_FLAG_X509_STRICT);
    bool ok = X509_verify_cert(ctx) == 1;
    X509_STORE_CTX_free(ctx);
    return ok;
  };
  CHECK(verify("api.example.com"));
  CHECK_FALSE(verify("other.example.com"));
  X509_STORE_free(store);

  // A client that trusts only the bundle completes a handshake naming the CONNECT host, and is
  // refused (access_denied) when its SNI names another host.
  auto server_ctx = make_intercept_context(**ca);
  REQUIRE(server_ctx);
  SslCtxPtr client_ctx(SSL_CTX_new(TLS_client_method()));
  SSL_CTX_load_verify_locations(client_ctx.get(), (*ca)->bundle_path().c_str(), nullptr);
  SSL_CTX_set_verify(client_ctx.get(), SSL_VERIFY_PEER, nullptr);
  for (const char* sni : {"api.example.com", "other.example.com"}) {
    INFO(sni);
    SSL* c = mem_ssl(client_ctx.get());
    SSL* s = mem_ssl(server_ctx->get());
    SSL_ctrl(c, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, const_cast<char*>(sni));
    SSL_set1_host(c, sni);
    SSL_set_connect_state(c);
    SSL_set_accept_state(s);
    InterceptCheck check{"api.example.com", ""};
    set_intercept_check(s, &check);
    pump(c, s);
    bool matched = std::string(sni) == "api.example.com";
    CHECK((SSL_is_init_finished(c) == 1) == matched);
    CHECK(check.refusal.empty() == matched);
    SSL_free(c);
    SSL_free(s);
    ERR_clear_error();
  }
  std::system(("rm -rf " + std::string(dir)).c_str());
}
