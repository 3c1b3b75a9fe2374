// SPDX-License-Identifier: BSD-3-Clause
// intercept: a CONNECT to a host whose rule adds headers — TLS both ways, the headers set per request.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include "egress/audit_log.h"
#include "egress/kernel_table.h"
#include "egress/policy.h"
#include "egress/proxy_services.h"
#include "egress/target.h"

namespace cellgate::egress {

struct InterceptJob {
  boost::beast::tcp_stream& client;    // the kernel's connection; the CONNECT header was read
  boost::beast::flat_buffer& pending;  // bytes the client sent after the CONNECT header
  boost::beast::tcp_stream& upstream;  // connected to the decided address
  const Target& target;
  const Rule& rule;
  KernelState& kernel;
  ProxyServices& services;
  AuditRecord& record;  // filled in (allowed, reason, bytes, requests); the caller finishes it
};

// Order: the upstream TLS handshake (verified against the system store: a bad certificate is a 502
// the client can read), then "200 Connection established", then the client's handshake against a
// leaf for the CONNECT host (an SNI naming another host is refused with access_denied), then per
// request: pacing, the Host header must name the CONNECT host (no fronting inside the tunnel),
// hop-by-hop headers and Upgrade dropped, the rule's headers set (secrets expanded only here),
// request and response relayed. runs in: the io thread.
boost::asio::awaitable<void> intercept(InterceptJob job);

}  // namespace cellgate::egress
