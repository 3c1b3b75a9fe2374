// SPDX-License-Identifier: BSD-3-Clause
// upstream: deciding a target (rule, resolution, address) and connecting to exactly that address.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/status.hpp>

#include "egress/audit_log.h"
#include "egress/proxy_services.h"
#include "egress/target.h"

namespace cellgate::egress {

struct Decision {
  const Rule* rule = nullptr;
  std::optional<IpAddress> address;     // set when allowed
  boost::beast::http::status status{};  // 403 for policy, 502 when the name does not resolve
  std::string refusal;
  std::string refused_by;  // AuditRecord::refused_by, when refused
};

// The checks in order: the kernel's byte caps, a rule for the target, resolution (the hosts file,
// then DNS), then the first permitted address (decision.h). runs in: the io thread.
boost::asio::awaitable<Decision> decide(KernelState& kernel, ProxyServices& services, const Target& target);

// Paces one new connection or request by the kernel's token bucket (waiting, never refusing),
// then counts it against the kernel's lifetime cap: "" or the refusal when the cap is used up.
boost::asio::awaitable<std::string> admit(KernelState& kernel);

// Connects to address:port (no other address, whatever the name resolves to now). "" or why not.
boost::asio::awaitable<std::string> connect_upstream(boost::beast::tcp_stream& stream, const IpAddress& address,
                                                     uint16_t port, std::chrono::milliseconds timeout);

// A record for a connection starting now (time, kernel, user, kind, target).
AuditRecord start_record(const KernelState& kernel, const std::string& kind, const Target* target);
// Fills in the duration and hands the record to the audit log.
void finish_record(ProxyServices& services, KernelState& kernel, AuditRecord& record,
                   std::chrono::steady_clock::time_point started);

}  // namespace cellgate::egress
