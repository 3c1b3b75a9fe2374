// SPDX-License-Identifier: BSD-3-Clause
// tls: the server's OpenSSL context.
#include "gateway/http/tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

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

bool looks_like_plain_http(std::string_view b) {
  for (std::string_view m : {"GET ", "POST ", "PUT ", "DELETE ", "PATCH ", "HEAD ", "OPTIONS "})
    if (b.starts_with(m)) return true;
  return false;
}

}  // namespace cellgate::http
