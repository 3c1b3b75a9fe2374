// SPDX-License-Identifier: BSD-3-Clause
// intercept: a CONNECT to a host whose rule adds headers — TLS both ways, the headers set per request.
#include "egress/intercept.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <fmt/core.h>

#include "egress/cert_authority.h"
#include "egress/http_relay.h"
#include "egress/message_relay.h"
#include "egress/tls_contexts.h"
#include "egress/upstream.h"

namespace cellgate::egress {
namespace {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using asio::redirect_error;
using asio::use_awaitable;

std::string tls_failure(SSL* ssl, const boost::system::error_code& ec) {
  long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK) {
    ERR_clear_error();
    return std::string("certificate verification failed: ") + X509_verify_cert_error_string(verify);
  }
  return openssl_error(ec.message());
}

// The Host a request names, canonical, with its port (443 when absent); nullopt when malformed.
std::optional<Target> host_of(const http::request_header<>& h) {
  auto it = h.find(http::field::host);
  if (it == h.end()) return std::nullopt;
  return parse_authority(std::string_view(it->value().data(), it->value().size()), 443);
}

}  // namespace

asio::awaitable<void> intercept(InterceptJob job) {
  ProxyServices& s = job.services;
  AuditRecord& rec = job.record;
  boost::system::error_code ec;

  TlsStream up(job.upstream, *s.upstream_context);
  if (!prepare_upstream(up.native_handle(), job.target.host)) {
    rec.reason = "cannot prepare the upstream TLS connection";
    rec.refused_by = "upstream";
    co_await write_refusal(job.client, http::status::bad_gateway, rec.reason);
    co_return;
  }
  set_expiry(up, s.timeouts.handshake);
  co_await up.async_handshake(ssl::stream_base::client, redirect_error(use_awaitable, ec));
  if (ec) {
    rec.reason = fmt::format("TLS to {} failed: {}", job.target.host, tls_failure(up.native_handle(), ec));
    rec.refused_by = "upstream";
    co_await write_refusal(job.client, http::status::bad_gateway, rec.reason);
    co_return;
  }

  static constexpr std::string_view kEstablished = "HTTP/1.1 200 Connection established\r\n\r\n";
  set_expiry(job.client, s.timeouts.handshake);
  co_await asio::async_write(job.client, asio::buffer(kEstablished), redirect_error(use_awaitable, ec));
  if (ec) co_return;
  rec.allowed = true;

  TlsStream client(job.client, *s.intercept_context);
  InterceptCheck check{job.target.host, ""};
  set_intercept_check(client.native_handle(), &check);
  set_expiry(client, s.timeouts.handshake);
  // The ClientHello may have come with the CONNECT (the buffered-handshake form reads it first).
  size_t used = co_await client.async_handshake(ssl::stream_base::server, job.pending.data(),
                                                redirect_error(use_awaitable, ec));
  job.pending.consume(used);
  set_intercept_check(client.native_handle(), nullptr);
  if (ec) {
    rec.allowed = check.refusal.empty() ? rec.allowed : false;
    if (!check.refusal.empty()) rec.refused_by = "policy";
    rec.reason = check.refusal.empty() ? "the client's TLS handshake failed: " + openssl_error(ec.message()) : check.refusal;
    co_return;
  }

  boost::beast::flat_buffer from_client(256 * 1024), from_upstream(256 * 1024);
  auto charge_out = [&](uint64_t n) { return job.kernel.charge_out(n) && (rec.bytes_out += n, true); };
  auto charge_in = [&](uint64_t n) { return job.kernel.charge_in(n) && (rec.bytes_in += n, true); };
  for (bool first = true;; first = false) {
    RequestParser p;
    p.header_limit(static_cast<std::uint32_t>(s.header_limit));
    p.body_limit(kNoBodyLimit);
    set_expiry(client, first ? s.timeouts.first_header : s.timeouts.keep_alive);
    co_await http::async_read_header(client, from_client, p, redirect_error(use_awaitable, ec));
    if (ec) break;  // the client is done (or sent something that is not HTTP/1.1)
    if (!first) {
      if (std::string why = co_await admit(job.kernel); !why.empty()) {
        rec.reason = why;
        co_await write_refusal(client, http::status::forbidden, why);
        break;
      }
    }
    auto& req = p.get();
    auto host = host_of(req.base());
    if (!host || host->host != job.target.host || host->port != job.target.port) {
      rec.reason = fmt::format("the Host header names another host than the CONNECT host {}", job.target.authority());
      co_await write_refusal(client, http::status::forbidden, rec.reason);
      break;
    }
    // Origin-form only: an absolute URL inside the tunnel could name another authority than Host.
    if (!req.target().starts_with("/") && req.target() != "*") {
      rec.reason = "the request target is not a path";
      co_await write_refusal(client, http::status::bad_request, rec.reason);
      break;
    }
    const bool client_keep = p.keep_alive();
    const bool head = req.method() == http::verb::head;
    const bool expect = strip_hop_by_hop(req.base(), false);
    req.set(http::field::host, job.target.port == 443 ? job.target.host : job.target.authority());
    for (const auto& h : job.rule.headers) req.set(h.name, s.secrets->expand(h.value));
    req.keep_alive(true);
    ++rec.requests;
    if (expect) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      co_await asio::async_write(client, asio::buffer(kContinue), redirect_error(use_awaitable, ec));
      if (ec) break;
    }
    ec = co_await relay_message(client, from_client, p, up, charge_out, s.timeouts.idle);
    if (ec) {
      if (ec == asio::error::operation_aborted && job.kernel.over_bytes()) rec.reason = "egress byte cap reached";
      break;
    }
    auto res = co_await forward_response(up, from_upstream, client, head, client_keep, charge_in, s.header_limit, s.timeouts.idle);
    if (res.ec && !res.wrote_header) {
      rec.reason = fmt::format("{} did not answer: {}", job.target.host, res.ec.message());
      co_await write_refusal(client, http::status::bad_gateway, rec.reason);
      break;
    }
    if (res.ec && res.ec == asio::error::operation_aborted && job.kernel.over_bytes()) rec.reason = "egress byte cap reached";
    if (res.ec || !res.keep_alive) break;
  }
  set_expiry(client, std::chrono::seconds(2));
  co_await client.async_shutdown(redirect_error(use_awaitable, ec));
}

}  // namespace cellgate::egress
