// SPDX-License-Identifier: BSD-3-Clause
// tls: the server's OpenSSL context.
#include "gateway/http/tls.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "common/config_error.h"

namespace cellgate::http {

namespace ssl = boost::asio::ssl;

namespace {

// OpenSSL's reason for the last failure, one line, then its queue cleared.
std::string openssl_reason(const boost::system::error_code& ec) {
  unsigned long e = ::ERR_peek_last_error();
  std::string why = e ? ::ERR_reason_error_string(e) ? ::ERR_reason_error_string(e) : ec.message() : ec.message();
  ::ERR_clear_error();
  return why;
}

}  // namespace

std::unique_ptr<ssl::context> make_tls_context(const std::string& certfile, const std::string& keyfile) {
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_server);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                   ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use);
  ::SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
  boost::system::error_code ec;
  ctx->use_certificate_chain_file(certfile, ec);
  if (ec) throw common::ConfigError("--certfile: cannot load a PEM certificate from " + certfile + ": " + openssl_reason(ec));
  ctx->use_private_key_file(keyfile, ssl::context::pem, ec);
  if (ec) throw common::ConfigError("--keyfile: cannot load a PEM private key from " + keyfile + ": " + openssl_reason(ec));
  if (::SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
    ::ERR_clear_error();
    throw common::ConfigError("--keyfile: " + keyfile + " is not the private key of the certificate in " + certfile);
  }
  return ctx;
}

namespace {

std::unique_ptr<ssl::context> cluster_context(ssl::context::method method, const std::string& cert,
                                              const std::string& key, const std::string& ca) {
  auto ctx = std::make_unique<ssl::context>(method);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                   ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  // Both ends are cellgate: nothing older than TLS 1.3 needs to be spoken.
  ::SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_3_VERSION);
  boost::system::error_code ec;
  ctx->use_certificate_chain_file(cert, ec);
  if (ec) throw common::ConfigError("--cluster-cert: cannot load a PEM certificate from " + cert + ": " + openssl_reason(ec));
  ctx->use_private_key_file(key, ssl::context::pem, ec);
  if (ec) throw common::ConfigError("--cluster-key: cannot load a PEM private key from " + key + ": " + openssl_reason(ec));
  if (::SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
    ::ERR_clear_error();
    throw common::ConfigError("--cluster-key: " + key + " is not the private key of the certificate in " + cert);
  }
  // Only the cluster CA: not the system's roots, which would let any public certificate in.
  ctx->load_verify_file(ca, ec);
  if (ec) throw common::ConfigError("--cluster-ca: cannot load a PEM CA certificate from " + ca + ": " + openssl_reason(ec));
  return ctx;
}

}  // namespace

std::unique_ptr<ssl::context> make_cluster_server_context(const std::string& cert, const std::string& key,
                                                          const std::string& ca) {
  auto ctx = cluster_context(ssl::context::tls_server, cert, key, ca);
  ctx->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  // No session tickets: a resumed session would skip the client certificate check's freshness, and
  // peers keep their connections open anyway.
  ::SSL_CTX_set_options(ctx->native_handle(), SSL_OP_NO_TICKET);
  ::SSL_CTX_set_num_tickets(ctx->native_handle(), 0);
  return ctx;
}

std::unique_ptr<ssl::context> make_cluster_client_context(const std::string& cert, const std::string& key,
                                                          const std::string& ca) {
  auto ctx = cluster_context(ssl::context::tls_client, cert, key, ca);
  ctx->set_verify_mode(ssl::verify_peer);
  return ctx;
}

bool cluster_client_verify(TlsStream& stream, const std::string& host) {
  SSL* ssl = stream.native_handle();
  X509_VERIFY_PARAM* param = ::SSL_get0_param(ssl);
  in6_addr ip6{};
  in_addr ip4{};
  const bool is_ip = ::inet_pton(AF_INET, host.c_str(), &ip4) == 1 || ::inet_pton(AF_INET6, host.c_str(), &ip6) == 1;
  if (is_ip) return ::X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) == 1;
  ::X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  if (::SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, const_cast<char*>(host.c_str())) != 1)
    return false;
  return ::X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size()) == 1;
}

std::string peer_certificate_name(TlsStream& stream) {
  SSL* ssl = stream.native_handle();
  if (::SSL_get_verify_result(ssl) != X509_V_OK) return "";
  X509* cert = ::SSL_get1_peer_certificate(ssl);
  if (!cert) return "";
  std::string name;
  char cn[256];
  const int n = ::X509_NAME_get_text_by_NID(::X509_get_subject_name(cert), NID_commonName, cn, sizeof(cn));
  if (n > 0) name.assign(cn, static_cast<size_t>(n));
  if (name.empty()) {
    auto* names = static_cast<GENERAL_NAMES*>(::X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
    for (int i = 0; names && i < sk_GENERAL_NAME_num(names) && name.empty(); ++i) {
      const GENERAL_NAME* g = sk_GENERAL_NAME_value(names, i);
      if (g->type == GEN_DNS)
        name.assign(reinterpret_cast<const char*>(ASN1_STRING_get0_data(g->d.dNSName)),
                    static_cast<size_t>(ASN1_STRING_length(g->d.dNSName)));
    }
    ::GENERAL_NAMES_free(names);
  }
  ::X509_free(cert);
  return name;
}

bool looks_like_plain_http(std::string_view b) {
  for (std::string_view m : {"GET ", "POST ", "PUT ", "DELETE ", "PATCH ", "HEAD ", "OPTIONS "})
    if (b.starts_with(m)) return true;
  return false;
}

}  // namespace cellgate::http
