// SPDX-License-Identifier: BSD-3-Clause
// proxy_session: one connection a kernel opened to its proxy endpoint — requests in, decisions, relays.
#include "egress/proxy_session.h"

#include <poll.h>

#include <optional>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <fmt/core.h>

#include "egress/http_relay.h"
#include "egress/message_relay.h"
#include "egress/intercept.h"
#include "egress/tls_peek.h"
#include "egress/tunnel.h"
#include "egress/upstream.h"

namespace cellgate::egress {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using asio::awaitable;
using asio::redirect_error;
using asio::use_awaitable;
using Clock = std::chrono::steady_clock;

constexpr size_t kMaxClientHello = 64 * 1024;
constexpr size_t kBufferLimit = 256 * 1024;

std::string printable(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 200)) out += c >= 0x20 && c < 0x7f ? c : '?';
  return out;
}

// True when a kept-alive upstream connection has nothing pending (no EOF, no stray bytes).
bool reusable(beast::tcp_stream& s) {
  pollfd p{s.socket().native_handle(), POLLIN | POLLRDHUP, 0};
  return s.socket().is_open() && ::poll(&p, 1, 0) == 0;
}

class Session {
 public:
  Session(asio::ip::tcp::socket socket, std::shared_ptr<KernelState> kernel, ProxyServices& services)
      : client_(std::move(socket)), buffer_(kBufferLimit), kernel_(std::move(kernel)), s_(services) {
    ++kernel_->counters.open;
    ++s_.open;
    cut_token_ = kernel_->on_cut([this] { cut(); });
  }
  ~Session() {
    kernel_->forget_cut(cut_token_);
    --kernel_->counters.open;
    --s_.open;
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  awaitable<void> run();

 private:
  awaitable<void> refuse(http::status status, const std::string& reason, AuditRecord record);
  awaitable<void> handle_connect(RequestParser& p);
  awaitable<bool> handle_forward(RequestParser& p);
  awaitable<void> tunnel(const Target& target, AuditRecord& record);
  void close_upstream(const std::string& reason);
  void cut() {
    cut_ = true;
    boost::system::error_code ignored;
    client_.socket().close(ignored);
    if (upstream_) upstream_->socket().close(ignored);
  }
  bool charge_out(AuditRecord& r, uint64_t n) { return kernel_->charge_out(n) && (r.bytes_out += n, true); }
  bool charge_in(AuditRecord& r, uint64_t n) { return kernel_->charge_in(n) && (r.bytes_in += n, true); }
  std::string ended_reason(const boost::system::error_code& ec) const {
    if (cut_) return "cut: the kernel's policy changed or it was removed";
    if (ec == asio::error::operation_aborted && kernel_->over_bytes()) return "egress byte cap reached";
    return "";
  }

  beast::tcp_stream client_;
  beast::flat_buffer buffer_;
  std::shared_ptr<KernelState> kernel_;
  ProxyServices& s_;
  uint64_t cut_token_ = 0;
  bool cut_ = false;
  // Plain forwarding keeps one upstream connection while requests name the same authority.
  std::optional<beast::tcp_stream> upstream_;
  beast::flat_buffer upstream_buffer_{kBufferLimit};
  std::string upstream_authority_;
  AuditRecord upstream_record_;
  Clock::time_point upstream_started_;
  std::vector<std::pair<std::string, std::string>> injected_;  // an insecure_http rule's headers
};

awaitable<void> Session::run() {
  boost::system::error_code ec;
  for (bool first = true; !cut_; first = false) {
    RequestParser p;
    p.header_limit(static_cast<std::uint32_t>(s_.header_limit));
    p.body_limit(kNoBodyLimit);
    client_.expires_after(first ? s_.timeouts.first_header : s_.timeouts.keep_alive);
    co_await http::async_read_header(client_, buffer_, p, redirect_error(use_awaitable, ec));
    if (ec == http::error::header_limit) {
      co_await refuse(http::status::request_header_fields_too_large, "the request header is larger than the proxy accepts",
                      start_record(*kernel_, "http", nullptr));
      break;
    }
    if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::operation_aborted ||
        ec == beast::error::timeout || ec == asio::error::connection_reset) {
      break;  // the client is done, or idle too long
    }
    if (ec) {
      co_await refuse(http::status::bad_request, "malformed request (" + ec.message() + ")", start_record(*kernel_, "http", nullptr));
      break;
    }
    // The first request was paced when the connection was accepted.
    if (!first) {
      if (std::string why = co_await admit(*kernel_); !why.empty()) {
        AuditRecord rec = start_record(*kernel_, "http", nullptr);
        rec.refused_by = "limit";
        co_await refuse(http::status::forbidden, why, std::move(rec));
        break;
      }
    }
    if (p.get().method() == http::verb::connect) {
      co_await handle_connect(p);
      break;
    }
    if (!co_await handle_forward(p)) break;
  }
  close_upstream("");
  client_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  client_.socket().close(ec);
}

awaitable<void> Session::refuse(http::status status, const std::string& reason, AuditRecord record) {
  record.allowed = false;
  record.reason = reason;
  if (record.refused_by.empty()) {
    // What the callers without a Decision refuse: requests it cannot read, upstreams it cannot reach.
    const bool request = status == http::status::bad_request || status == http::status::request_header_fields_too_large;
    record.refused_by = request ? "request" : status == http::status::bad_gateway ? "upstream" : "policy";
  }
  const auto started = Clock::now();
  co_await write_refusal(client_, status, reason);
  finish_record(s_, *kernel_, record, started);
}

awaitable<void> Session::handle_connect(RequestParser& p) {
  const std::string_view raw(p.get().target().data(), p.get().target().size());
  auto target = parse_authority(raw, std::nullopt);
  if (!target) {
    co_await refuse(http::status::bad_request, "CONNECT needs host:port, got '" + printable(raw) + "'",
                    start_record(*kernel_, "connect", nullptr));
    co_return;
  }
  AuditRecord rec = start_record(*kernel_, "connect", &*target);
  Decision d = co_await decide(*kernel_, s_, *target);
  if (!d.address) {
    rec.refused_by = d.refused_by;
    co_await refuse(d.status, d.refusal, rec);
    co_return;
  }
  const Rule rule = *d.rule;  // a copy: a policy change may replace the kernel's rules meanwhile
  if (!rule.headers.empty() && s_.intercept_context == nullptr) {
    co_await refuse(http::status::forbidden, "this host's rule adds headers, but the proxy has no CA to intercept TLS", rec);
    co_return;
  }
  rec.address = d.address->to_string();
  upstream_.emplace(client_.get_executor());
  if (std::string err = co_await connect_upstream(*upstream_, *d.address, target->port, s_.timeouts.connect); !err.empty()) {
    co_await refuse(http::status::bad_gateway, err, rec);
    co_return;
  }
  const auto started = Clock::now();
  if (!rule.headers.empty()) {
    rec.kind = "intercept";
    co_await intercept(InterceptJob{client_, buffer_, *upstream_, *target, rule, *kernel_, s_, rec});
    if (rec.reason.empty()) rec.reason = ended_reason({});
  } else {
    co_await tunnel(*target, rec);
  }
  finish_record(s_, *kernel_, rec, started);
}

awaitable<void> Session::tunnel(const Target& target, AuditRecord& rec) {
  boost::system::error_code ec;
  static constexpr std::string_view kEstablished = "HTTP/1.1 200 Connection established\r\n\r\n";
  client_.expires_after(s_.timeouts.handshake);
  co_await asio::async_write(client_, asio::buffer(kEstablished), redirect_error(use_awaitable, ec));
  if (ec) co_return;
  rec.allowed = true;
  // The ClientHello: what the client sent after the CONNECT header, then more until OpenSSL has it all.
  ClientHelloPeek peek(s_.peek_context, target.host, target.ip.has_value());
  std::string hello(static_cast<const char*>(buffer_.data().data()), buffer_.size());
  buffer_.consume(buffer_.size());
  auto outcome = peek.feed(hello.data(), hello.size());
  std::vector<char> chunk(16 * 1024);
  while (outcome == ClientHelloPeek::Outcome::kNeedMore) {
    if (hello.size() > kMaxClientHello) break;
    client_.expires_after(s_.timeouts.handshake);
    size_t n = co_await client_.async_read_some(asio::buffer(chunk), redirect_error(use_awaitable, ec));
    if (ec) break;
    hello.append(chunk.data(), n);
    outcome = peek.feed(chunk.data(), n);
  }
  client_.expires_never();
  if (outcome != ClientHelloPeek::Outcome::kAccepted) {
    rec.allowed = false;
    rec.refused_by = outcome == ClientHelloPeek::Outcome::kRefused ? "policy" : "request";
    rec.reason = outcome == ClientHelloPeek::Outcome::kNeedMore
                     ? (ec ? "the client sent no complete TLS ClientHello" : "the TLS ClientHello is larger than 64 KiB")
                     : peek.reason();
    if (outcome == ClientHelloPeek::Outcome::kRefused) {
      std::string alert = peek.alert_bytes();
      client_.expires_after(std::chrono::seconds(2));
      co_await asio::async_write(client_, asio::buffer(alert), redirect_error(use_awaitable, ec));
    }
    co_return;
  }
  if (!charge_out(rec, hello.size())) {
    rec.reason = "egress byte cap reached";
    co_return;
  }
  upstream_->expires_after(s_.timeouts.idle);
  co_await asio::async_write(upstream_->socket(), asio::buffer(hello), redirect_error(use_awaitable, ec));
  if (ec) {
    rec.reason = "writing to the upstream failed: " + ec.message();
    co_return;
  }
  TunnelMeter meter{[&](uint64_t n) { return charge_out(rec, n); }, [&](uint64_t n) { return charge_in(rec, n); }};
  std::string why = co_await relay_tunnel(client_, *upstream_, meter, s_.timeouts.idle);
  rec.reason = cut_ ? ended_reason({}) : why;
}

awaitable<bool> Session::handle_forward(RequestParser& p) {
  auto& req = p.get();
  const std::string_view raw(req.target().data(), req.target().size());
  std::string authority, origin;
  if (!split_absolute_form(raw, authority, origin)) {
    std::string why = raw.starts_with("https://") ? "https URLs go through CONNECT (set HTTPS_PROXY)"
                                                  : "not a proxy request: the request line needs an absolute http:// URL";
    co_await refuse(http::status::bad_request, why, start_record(*kernel_, "http", nullptr));
    co_return false;
  }
  auto target = parse_authority(authority, 80);
  if (!target) {
    co_await refuse(http::status::bad_request, "not a host[:port]: '" + printable(authority) + "'", start_record(*kernel_, "http", nullptr));
    co_return false;
  }
  if (!upstream_ || upstream_authority_ != target->authority() || !reusable(*upstream_) || upstream_buffer_.size() > 0) {
    close_upstream("");
    AuditRecord rec = start_record(*kernel_, "http", &*target);
    Decision d = co_await decide(*kernel_, s_, *target);
    if (!d.address) {
      rec.refused_by = d.refused_by;
      co_await refuse(d.status, d.refusal, rec);
      co_return false;
    }
    if (!d.rule->headers.empty() && !d.rule->insecure_http) {
      co_await refuse(http::status::forbidden, "this host's rule adds credentials, which go over https only", rec);
      co_return false;
    }
    rec.address = d.address->to_string();
    upstream_.emplace(client_.get_executor());
    if (std::string err = co_await connect_upstream(*upstream_, *d.address, target->port, s_.timeouts.connect); !err.empty()) {
      upstream_.reset();
      co_await refuse(http::status::bad_gateway, err, rec);
      co_return false;
    }
    rec.allowed = true;
    upstream_record_ = std::move(rec);
    upstream_authority_ = target->authority();
    upstream_started_ = Clock::now();
    // Headers of an insecure_http rule; none otherwise.
    for (const auto& h : d.rule->headers) injected_.emplace_back(h.name, s_.secrets->expand(h.value));
  }
  AuditRecord& rec = upstream_record_;
  ++rec.requests;
  const bool client_keep = p.keep_alive();
  const bool head = req.method() == http::verb::head;
  const bool upgrade = req.find(http::field::upgrade) != req.end();
  const bool expect = strip_hop_by_hop(req.base(), upgrade);
  req.target(origin);
  req.set(http::field::host, target->port == 80 ? target->host : target->authority());
  for (const auto& [name, value] : injected_) req.set(name, value);
  if (!upgrade) req.keep_alive(true);
  boost::system::error_code ec;
  if (expect) {
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    co_await asio::async_write(client_, asio::buffer(kContinue), redirect_error(use_awaitable, ec));
    if (ec) co_return false;
  }
  auto out = [this](uint64_t n) { return charge_out(upstream_record_, n); };
  auto in = [this](uint64_t n) { return charge_in(upstream_record_, n); };
  ec = co_await relay_message(client_, buffer_, p, *upstream_, out, s_.timeouts.idle);
  if (ec) {
    close_upstream(ended_reason(ec));
    co_return false;
  }
  auto res = co_await forward_response(*upstream_, upstream_buffer_, client_, head, client_keep, in, s_.header_limit, s_.timeouts.idle);
  if (res.ec && !res.wrote_header) {
    std::string why = fmt::format("{} did not answer: {}", target->host, res.ec.message());
    close_upstream(why);
    co_await write_refusal(client_, http::status::bad_gateway, why);
    co_return false;
  }
  if (res.ec) {
    close_upstream(ended_reason(res.ec));
    co_return false;
  }
  if (res.switched) {
    TunnelMeter meter{out, in};
    std::string why = co_await relay_tunnel(client_, *upstream_, meter, s_.timeouts.idle);
    close_upstream(cut_ ? ended_reason({}) : why);
    co_return false;
  }
  if (!res.keep_alive) close_upstream("");
  co_return res.keep_alive;
}

void Session::close_upstream(const std::string& reason) {
  if (!upstream_) return;
  if (upstream_record_.allowed) {
    if (upstream_record_.reason.empty()) upstream_record_.reason = reason;
    finish_record(s_, *kernel_, upstream_record_, upstream_started_);
  }
  boost::system::error_code ignored;
  upstream_->socket().close(ignored);
  upstream_.reset();
  upstream_buffer_.consume(upstream_buffer_.size());
  upstream_authority_.clear();
  upstream_record_ = AuditRecord{};
  injected_.clear();
}

}  // namespace

awaitable<void> serve_connection(asio::ip::tcp::socket client, std::shared_ptr<KernelState> kernel, ProxyServices& services) {
  Session session(std::move(client), std::move(kernel), services);
  co_await session.run();
}

}  // namespace cellgate::egress
