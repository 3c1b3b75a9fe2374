// SPDX-License-Identifier: BSD-3-Clause
// http_client: cellgate's REST API over HTTP/1.1.
#include "client/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

namespace cellgate::client {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using common::Errc;
using tcp = asio::ip::tcp;

namespace {

bool digits_only(const std::string& s) {
  return !s.empty() && s.size() <= 5 && s.find_first_not_of("0123456789") == std::string::npos;
}

// One exchange driven by async operations on a private io_context: Beast's tcp_stream timeouts apply
// only to asynchronous operations, and the io_context's run() makes the whole thing synchronous.
class Exchange {
 public:
  Exchange(const BaseUrl& url, http::request<http::string_body> req, std::chrono::seconds timeout)
      : url_(url), req_(std::move(req)), timeout_(timeout) {
    parser_.body_limit(HttpClient::kMaxReplyBytes);
  }

  asio::io_context& io() { return io_; }

  common::Result<RestReply> run() {
    stream_.expires_after(timeout_);
    resolver_.async_resolve(url_.host, url_.port, [this](beast::error_code ec, tcp::resolver::results_type r) {
      if (ec) return fail("resolve", ec);
      stream_.async_connect(r, [this](beast::error_code ec2, const tcp::endpoint&) {
        if (ec2) return fail("connect", ec2);
        http::async_write(stream_, req_, [this](beast::error_code ec3, size_t) {
          if (ec3) return fail("write", ec3);
          http::async_read(stream_, buffer_, parser_, [this](beast::error_code ec4, size_t) {
            if (ec4) return fail("read", ec4);
            done_ = true;
          });
        });
      });
    });
    io_.run();
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    if (!done_) return common::make_error(Errc::kUnavailable, error_.empty() ? "call cancelled" : error_);
    const auto& res = parser_.get();
    RestReply reply;
    reply.status = static_cast<int>(res.result_int());
    if (!res.body().empty()) {
      reply.body = nlohmann::json::parse(res.body(), nullptr, false);
      if (reply.body.is_discarded()) reply.body = res.body();
    }
    return reply;
  }

 private:
  void fail(const char* stage, const beast::error_code& ec) {
    error_ = fmt_error(stage, ec);
  }
  std::string fmt_error(const char* stage, const beast::error_code& ec) const {
    std::string what = ec == beast::error::timeout ? "timed out" : ec.message();
    return std::string("cellgate at ") + url_.host + ":" + url_.port + " unreachable (" + stage + ": " + what + ")";
  }

  const BaseUrl& url_;
  http::request<http::string_body> req_;
  std::chrono::seconds timeout_;
  asio::io_context io_{1};
  tcp::resolver resolver_{io_};
  beast::tcp_stream stream_{io_};
  beast::flat_buffer buffer_;
  http::response_parser<http::string_body> parser_;
  bool done_ = false;
  std::string error_;
};

}  // namespace

common::Result<BaseUrl> parse_base_url(const std::string& url) {
  constexpr std::string_view kScheme = "http://";
  if (url.rfind("https://", 0) == 0)
    return common::make_error(Errc::kBadRequest, "https URLs are not supported; use http:// (loopback or a TLS proxy)");
  if (url.rfind(kScheme, 0) != 0) return common::make_error(Errc::kBadRequest, "URL must start with http://: " + url);
  std::string rest = url.substr(kScheme.size());
  BaseUrl out;
  size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  out.base = slash == std::string::npos ? "/" : rest.substr(slash);
  if (auto q = out.base.find_first_of("?#"); q != std::string::npos) out.base.resize(q);
  if (out.base.back() != '/') out.base += '/';
  if (authority.find('@') != std::string::npos)
    return common::make_error(Errc::kBadRequest, "URL must not carry credentials; use --token");
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string::npos) return common::make_error(Errc::kBadRequest, "bad IPv6 address in URL: " + url);
    out.host = authority.substr(1, close - 1);
    std::string tail = authority.substr(close + 1);
    if (!tail.empty() && tail.front() != ':') return common::make_error(Errc::kBadRequest, "bad URL: " + url);
    out.port = tail.empty() ? "80" : tail.substr(1);
  } else {
    size_t colon = authority.rfind(':');
    out.host = authority.substr(0, colon);
    out.port = colon == std::string::npos ? "80" : authority.substr(colon + 1);
  }
  if (out.host.empty()) return common::make_error(Errc::kBadRequest, "URL has no host: " + url);
  if (!digits_only(out.port) || std::stoi(out.port) > 65535)
    return common::make_error(Errc::kBadRequest, "bad port in URL: " + url);
  return out;
}

std::string escape_segment(const std::string& segment) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : segment) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

namespace {

http::request<http::string_body> make_request(const BaseUrl& url, http::verb method, const std::string& path,
                                              const std::string& token) {
  http::request<http::string_body> req;
  req.method(method);
  req.target(url.base + path);
  req.version(11);
  const bool v6 = url.host.find(':') != std::string::npos;
  req.set(http::field::host, (v6 ? "[" + url.host + "]" : url.host) + ":" + url.port);
  req.set(http::field::user_agent, "cellgate-mcp");
  req.set("X-Cellgate-Client", "mcp");  // the journal's label for what this client runs
  req.set(http::field::accept, "application/json");
  if (!token.empty()) req.set(http::field::authorization, "token " + token);
  req.keep_alive(false);
  return req;
}

}  // namespace

common::Result<RestReply> HttpClient::call(const RestCall& call, const std::string& token) {
  auto req = make_request(url_, http::string_to_verb(call.method), call.path, token);
  if (!call.body.is_null()) {
    req.set(http::field::content_type, "application/json");
    req.body() = call.body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  req.prepare_payload();
  return exchange(std::move(req), call.timeout);
}

common::Result<RestReply> HttpClient::put_bytes(const std::string& path, std::string bytes, const std::string& token,
                                                 std::chrono::seconds timeout) {
  auto req = make_request(url_, http::verb::put, path, token);
  req.set(http::field::content_type, "application/octet-stream");
  req.body() = std::move(bytes);
  req.prepare_payload();
  return exchange(std::move(req), timeout);
}

common::Result<RestReply> HttpClient::exchange(http::request<http::string_body> req, std::chrono::seconds timeout) {
  Exchange exchange(url_, std::move(req), timeout);
  {
    std::lock_guard lock(mu_);
    if (stopped_) return common::make_error(Errc::kUnavailable, "cellgate is shutting down");
    active_.insert(&exchange.io());
  }
  auto result = exchange.run();
  std::lock_guard lock(mu_);
  active_.erase(&exchange.io());
  return result;
}

void HttpClient::stop() {
  std::lock_guard lock(mu_);
  stopped_ = true;
  for (auto* io : active_) io->stop();  // io_context::stop is thread-safe; run() then returns unfinished
}

}  // namespace cellgate::client
