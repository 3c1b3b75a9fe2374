// SPDX-License-Identifier: BSD-3-Clause
// mcp_api: /mcp, the MCP streamable HTTP endpoint, served by cellgate_mcp on worker threads.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/core.h>

#include "gateway/gateway.h"
#include "mcp/http_backend.h"
#include "mcp/http_transport.h"

namespace cellgate::gateway {

namespace asio = boost::asio;
using asio::awaitable;

namespace {

// A tool call holds its thread for as long as the code it runs (an execute can take minutes), so
// there is a thread for every call admitted: none waits behind another's. Beyond the cap, 503 rather
// than an unbounded queue; and one user gets at most a quarter of the calls, so a user's slow cells
// (or a runaway agent) cannot take /mcp away from the other users of a shared gateway.
constexpr int kMaxMcpInFlight = 32;
constexpr int kMaxMcpPerUser = kMaxMcpInFlight / 4;

// The token the request authenticated with (route() has checked it): header first, then ?token=.
std::string presented_token(const Request& req) {
  std::string_view auth(req[http::field::authorization].data(), req[http::field::authorization].size());
  if (auth.starts_with("token ")) return std::string(auth.substr(6));
  if (auth.starts_with("Bearer ")) return std::string(auth.substr(7));
  return query_param(std::string_view(req.target().data(), req.target().size()), "token");
}

// The loopback address of the listening socket: a wildcard bind is reached through the loopback interface.
std::string loopback_host(const std::string& ip) {
  if (ip == "0.0.0.0") return "127.0.0.1";
  if (ip == "::") return "[::1]";
  return ip.find(':') != std::string::npos ? "[" + ip + "]" : ip;
}

}  // namespace

awaitable<Response> Gateway::handle_mcp(Request& req, const Caller& caller) {
  if (!mcp_) {
    auto url = mcp::parse_base_url(fmt::format("http://{}:{}{}", loopback_host(local_ip_), local_port_, config_.base_url));
    if (!url || local_port_ == 0) co_return error_response(req, common::Errc::kUnavailable, "MCP endpoint not ready");
    mcp_backend_ = std::make_shared<mcp::HttpBackend>(url.value());
    mcp_ = std::make_unique<mcp::McpServer>(mcp_backend_);
    mcp_pool_ = std::make_unique<asio::thread_pool>(kMaxMcpInFlight);
  }
  if (mcp_in_flight_ >= kMaxMcpInFlight)
    co_return error_response(req, common::Errc::kUnavailable, "too many MCP requests in progress");
  int& mine = mcp_in_flight_by_user_[caller.user.name];
  if (mine >= kMaxMcpPerUser)
    co_return error_response(req, common::Errc::kUnavailable,
                             fmt::format("too many MCP requests of yours in progress (at most {})", kMaxMcpPerUser));
  mcp::McpHttpHeaders headers{std::string(req["Mcp-Session-Id"]), std::string(req[http::field::content_type]),
                              std::string(req[http::field::accept])};
  const std::string method(req.method_string());
  const std::string token = presented_token(req);
  mcp::McpServer& server = *mcp_;
  // Runs on the pool; the co_await resumes this coroutine back on the io thread. Named values only in the
  // co_await operand: GCC 12 can destroy temporaries there twice.
  auto work = [&]() -> awaitable<mcp::McpHttpResult> {
    co_return mcp::handle_mcp_http(server, method, headers, req.body(), token);
  };
  auto pool = mcp_pool_->get_executor();
  ++mcp_in_flight_;
  ++mine;
  // The map's node is stable while the call is in flight: it is erased only when its count is 0.
  struct Release {
    Gateway& gw;
    const std::string& user;
    ~Release() {
      --gw.mcp_in_flight_;
      auto it = gw.mcp_in_flight_by_user_.find(user);
      if (--it->second == 0) gw.mcp_in_flight_by_user_.erase(it);
    }
  } release{*this, caller.user.name};
  mcp::McpHttpResult result = co_await asio::co_spawn(pool, work, asio::use_awaitable);

  Response res{static_cast<http::status>(result.status), req.version()};
  for (const auto& [name, value] : result.headers) res.set(name, value);
  res.set(http::field::access_control_expose_headers, "Mcp-Session-Id");
  res.set(http::field::cache_control, "no-store");
  res.keep_alive(req.keep_alive());
  res.body() = std::move(result.body);
  res.prepare_payload();
  co_return res;
}

}  // namespace cellgate::gateway
