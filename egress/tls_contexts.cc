// SPDX-License-Identifier: BSD-3-Clause
// tls_contexts: OpenSSL contexts for interception — the jail-facing server and the upstream client.
#include "egress/tls_contexts.h"

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "egress/target.h"

namespace cellgate::egress {
namespace {

using common::Errc;
using common::make_error;

// Asio keeps its verify callback in the SSL's app data, so ours lives in an ex_data slot.
int check_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

constexpr unsigned char kAlpnHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};

int intercept_server_name(SSL* ssl, int* alert, void* arg) {
  auto* ca = static_cast<CertAuthority*>(arg);
  auto* check = static_cast<InterceptCheck*>(SSL_get_ex_data(ssl, check_index()));
  *alert = SSL_AD_ACCESS_DENIED;
  if (check == nullptr) return SSL_TLSEXT_ERR_ALERT_FATAL;
  const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  auto canonical = name ? canonical_host_name(name) : std::nullopt;
  if (!canonical || *canonical != check->expected) {
    check->refusal = name ? "the TLS server name '" + (canonical ? *canonical : std::string("?")) +
                                "' is not the CONNECT host " + check->expected
                          : "the TLS ClientHello names no server (SNI), so it cannot be checked against " + check->expected;
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  X509* leaf = ca->leaf_for(check->expected);
  if (leaf == nullptr || SSL_use_certificate(ssl, leaf) != 1 || SSL_use_PrivateKey(ssl, ca->leaf_key()) != 1) {
    check->refusal = "cannot mint a certificate for " + check->expected;
    *alert = SSL_AD_INTERNAL_ERROR;
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  return SSL_TLSEXT_ERR_OK;
}

int select_http11(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned inlen, void*) {
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, outlen, kAlpnHttp11, sizeof kAlpnHttp11, in, inlen) != OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

}  // namespace

void set_intercept_check(SSL* ssl, InterceptCheck* check) { SSL_set_ex_data(ssl, check_index(), check); }

common::Result<SslCtxPtr> make_intercept_context(CertAuthority& ca) {
  SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()));
  if (!ctx) return make_error(Errc::kInternal, "interception context: " + openssl_error("SSL_CTX_new failed"));
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  // The macro forms of these calls use C casts (-Wold-style-cast); these are what they expand to.
  SSL_CTX_callback_ctrl(ctx.get(), SSL_CTRL_SET_TLSEXT_SERVERNAME_CB, reinterpret_cast<void (*)()>(intercept_server_name));
  SSL_CTX_ctrl(ctx.get(), SSL_CTRL_SET_TLSEXT_SERVERNAME_ARG, 0, &ca);
  SSL_CTX_set_alpn_select_cb(ctx.get(), select_http11, nullptr);
  // Present the CA too, so a client that was given only the bundle builds the chain either way.
  SSL_CTX_add_extra_chain_cert(ctx.get(), X509_dup(ca.certificate()));
  return ctx;
}

common::Result<SslCtxPtr> make_upstream_context(const std::string& extra_ca_file) {
  SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) return make_error(Errc::kInternal, "upstream context: " + openssl_error("SSL_CTX_new failed"));
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  if (SSL_CTX_set_default_verify_paths(ctx.get()) != 1)
    return make_error(Errc::kInternal, "upstream context: " + openssl_error("no system CA store"));
  if (!extra_ca_file.empty() && SSL_CTX_load_verify_locations(ctx.get(), extra_ca_file.c_str(), nullptr) != 1)
    return make_error(Errc::kBadRequest, "--upstream-ca: cannot load " + extra_ca_file + ": " + openssl_error("not PEM"));
  SSL_CTX_set_alpn_protos(ctx.get(), kAlpnHttp11, sizeof kAlpnHttp11);
  return ctx;
}

bool prepare_upstream(SSL* ssl, const std::string& host) {
  if (SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, const_cast<char*>(host.c_str())) != 1) return false;
  SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  return SSL_set1_host(ssl, host.c_str()) == 1;
}

}  // namespace cellgate::egress
