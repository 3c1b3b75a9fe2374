// SPDX-License-Identifier: BSD-3-Clause
// proxy_services: what every proxied connection uses (resolver, checks, TLS, secrets, audit) and its timeouts.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include <boost/asio/ssl/context.hpp>

#include "egress/address.h"
#include "egress/audit_log.h"
#include "egress/decision.h"
#include "egress/kernel_table.h"
#include "egress/refusal_feed.h"
#include "egress/resolver.h"
#include "egress/secrets.h"

namespace cellgate::egress {

struct Timeouts {
  std::chrono::milliseconds first_header{30000};  // a new connection's first request
  std::chrono::milliseconds keep_alive{60000};    // between requests on one connection
  std::chrono::milliseconds connect{10000};       // upstream TCP connect
  std::chrono::milliseconds handshake{10000};     // each TLS handshake, and the ClientHello
  std::chrono::milliseconds idle{300000};         // no byte either way (tunnels, bodies)
};

// Owned by the egress server; lives as long as the io_context runs. runs in: the io thread.
struct ProxyServices {
  Resolver* resolver = nullptr;
  HostAddresses* host_addresses = nullptr;
  std::vector<DeniedEndpoint> denied;
  SSL_CTX* peek_context = nullptr;
  boost::asio::ssl::context* intercept_context = nullptr;  // null: no CA, no header rules
  boost::asio::ssl::context* upstream_context = nullptr;
  const Secrets* secrets = nullptr;
  AuditLog* audit = nullptr;
  RefusalFeed* refusals = nullptr;  // the gateway's watch (null: nobody is told)
  Timeouts timeouts;
  size_t header_limit = 32 * 1024;
  uint64_t max_open = 4096;  // connections open at once, all kernels together
  uint64_t open = 0;

  // Writes the record to the audit log and the kernel's recent lines; counts refusals and pushes
  // them to the watchers.
  void record(KernelState& kernel, const AuditRecord& r);
};

}  // namespace cellgate::egress
