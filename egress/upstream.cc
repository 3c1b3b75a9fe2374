// SPDX-License-Identifier: BSD-3-Clause
// upstream: deciding a target (rule, resolution, address) and connecting to exactly that address.
#include "egress/upstream.h"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/core.h>

#include "common/time_format.h"

namespace cellgate::egress {

namespace asio = boost::asio;
namespace http = boost::beast::http;

asio::awaitable<Decision> decide(KernelState& kernel, ProxyServices& services, const Target& target) {
  Decision d;
  d.status = http::status::forbidden;
  if (kernel.out_spent()) {
    d.refusal = fmt::format("this kernel's egress cap of {} bytes out is used up", kernel.limits.bytes_out);
    d.refused_by = "limit";
    co_return d;
  }
  if (kernel.in_spent()) {
    d.refusal = fmt::format("this kernel's egress cap of {} bytes in is used up", kernel.limits.bytes_in);
    d.refused_by = "limit";
    co_return d;
  }
  RuleMatch m = match_target(kernel.policy, target);
  if (m.rule == nullptr) {
    d.refusal = std::move(m.refusal);
    d.refused_by = "policy";
    co_return d;
  }
  Resolution r;
  if (target.ip) r.addresses = {*target.ip};
  else r = co_await services.resolver->resolve(target.host);
  if (r.addresses.empty()) {
    d.status = http::status::bad_gateway;
    d.refusal = r.error.empty() ? target.host + " has no address" : r.error;
    d.refused_by = "upstream";
    co_return d;
  }
  AddressChoice c = choose_address(*m.rule, target, r.addresses, *services.host_addresses, services.denied);
  if (!c.address) {
    d.refusal = std::move(c.refusal);
    d.refused_by = "address";
    co_return d;
  }
  d.rule = m.rule;
  d.address = c.address;
  co_return d;
}

asio::awaitable<std::string> admit(KernelState& kernel) {
  for (;;) {
    auto wait = kernel.bucket.take(std::chrono::steady_clock::now());
    if (wait.count() == 0) break;
    asio::steady_timer timer(co_await asio::this_coro::executor, wait);
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  if (++kernel.counters.connections > kernel.limits.connections)
    co_return fmt::format("this kernel's cap of {} connections and requests is used up", kernel.limits.connections);
  co_return "";
}

asio::awaitable<std::string> connect_upstream(boost::beast::tcp_stream& stream, const IpAddress& address, uint16_t port,
                                              std::chrono::milliseconds timeout) {
  boost::system::error_code ec;
  stream.expires_after(timeout);
  co_await stream.async_connect(asio::ip::tcp::endpoint(address, port), asio::redirect_error(asio::use_awaitable, ec));
  stream.expires_never();
  if (ec == boost::beast::error::timeout) co_return fmt::format("connecting to {} port {} timed out", address.to_string(), port);
  if (ec) co_return fmt::format("cannot connect to {} port {}: {}", address.to_string(), port, ec.message());
  stream.socket().set_option(asio::ip::tcp::no_delay(true), ec);
  co_return "";
}

AuditRecord start_record(const KernelState& kernel, const std::string& kind, const Target* target) {
  AuditRecord r;
  r.time = common::iso8601_now();
  r.kernel = kernel.id;
  r.user = kernel.user;
  r.kind = kind;
  if (target != nullptr) {
    r.host = target->host;
    r.port = target->port;
  }
  return r;
}

void finish_record(ProxyServices& services, KernelState& kernel, AuditRecord& record,
                   std::chrono::steady_clock::time_point started) {
  record.duration_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  services.record(kernel, record);
}

}  // namespace cellgate::egress
