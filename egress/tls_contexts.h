// SPDX-License-Identifier: BSD-3-Clause
// tls_contexts: OpenSSL contexts for interception — the jail-facing server and the upstream client.
#pragma once

#include <openssl/ssl.h>

#include <string>

#include "common/result.h"
#include "egress/cert_authority.h"
#include "egress/tls_peek.h"

namespace cellgate::egress {

// What one intercepted connection expects of the client's handshake (attached to its SSL).
struct InterceptCheck {
  std::string expected;  // the canonical CONNECT host
  std::string refusal;   // set by the SNI callback when the client named another host
};
// Attaches `check` (owned by the caller, alive until the handshake ends) to ssl.
void set_intercept_check(SSL* ssl, InterceptCheck* check);

// The server side the jail sees: a leaf for the CONNECT host minted by `ca` (installed from the SNI
// callback, which refuses an SNI other than the CONNECT host with access_denied), TLS 1.2+, ALPN
// http/1.1 only (the proxy reads HTTP/1.1; a client offering only h2 fails the handshake).
common::Result<SslCtxPtr> make_intercept_context(CertAuthority& ca);

// The upstream client: peer verification against the system store and `extra_ca_file` (when not
// empty), TLS 1.2+, ALPN http/1.1. Per connection, prepare_upstream sets SNI and the name to verify.
common::Result<SslCtxPtr> make_upstream_context(const std::string& extra_ca_file);
bool prepare_upstream(SSL* ssl, const std::string& host);

}  // namespace cellgate::egress
