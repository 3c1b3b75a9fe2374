// SPDX-License-Identifier: BSD-3-Clause
// mcp_api: /mcp, served by cellgate_mcp on threads of its own.
#include "gateway/api/mcp_api.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/core.h>

#include "common/log.h"
#include "client/http_client.h"
#include "mcp/http_transport.h"
#include "mcp/server.h"

namespace cellgate::api {

namespace asio = boost::asio;
using asio::awaitable;

namespace {

// A tool call holds its thread for as long as the code it runs (an execute can take minutes), so
// there is a thread for every call running: none waits behind another user's. One user runs at most a
// quarter of them, so a user's slow cells (or a runaway agent) cannot take /mcp away from the other
// users of a shared gateway; the user's further calls wait, in order, for one of their own to end.
// Beyond the caps, 503 rather than an unbounded queue.
constexpr int kMaxMcpInFlight = 32;
constexpr int kMaxMcpPerUser = kMaxMcpInFlight / 4;
constexpr size_t kMaxMcpWaitingPerUser = 32;

// The loopback address of the listening socket: a wildcard bind is reached through the loopback interface.
std::string loopback_host(const std::string& ip) {
  if (ip == "0.0.0.0") return "127.0.0.1";
  if (ip == "::") return "[::1]";
  return ip.find(':') != std::string::npos ? "[" + ip + "]" : ip;
}

}  // namespace

// At the end of a call: its thread goes to the user's next waiting call, else back to everyone.
struct McpApi::Release {
  McpApi& api;
  const std::string& user;
  ~Release() {
    auto it = api.users_.find(user);
    if (!it->second.waiting.empty()) {
      it->second.waiting.front()->cancel();
      it->second.waiting.pop_front();
      return;
    }
    --api.in_flight_;
    if (--it->second.running == 0) api.users_.erase(it);
  }
};

McpApi::McpApi(asio::io_context& io, std::string base_url) : io_(io), base_url_(std::move(base_url)) {}

McpApi::~McpApi() {
  if (backend_) backend_->stop();
  if (threads_) threads_->join();
}

void McpApi::set_local_endpoint(const std::string& ip, int port) {
  local_ip_ = ip;
  local_port_ = port;
}

nlohmann::json McpApi::status() const {
  size_t waiting = 0;
  for (const auto& [user, calls] : users_) waiting += calls.waiting.size();
  return {{"running", in_flight_}, {"waiting", waiting}};
}

awaitable<http::Reply> McpApi::call(Call& call) {
  http::Request& req = call.req;
  if (!server_) {
    auto url = client::parse_base_url(fmt::format("http://{}:{}{}", loopback_host(local_ip_), local_port_, base_url_));
    if (!url || local_port_ == 0)
      co_return reply(http::error_response(req, common::Errc::kUnavailable, "MCP endpoint not ready"));
    backend_ = std::make_shared<client::HttpClient>(url.value());
    server_ = std::make_unique<mcp::McpServer>(backend_);
    threads_ = std::make_unique<asio::thread_pool>(kMaxMcpInFlight);
  }
  const std::string& user = call.caller.user.name;
  bool waited = false;
  UserCalls& calls = users_[user];  // map nodes are stable; erased only once the user has no call
  if (calls.running < kMaxMcpPerUser) {
    if (in_flight_ >= kMaxMcpInFlight) {
      if (calls.running == 0) users_.erase(user);
      co_return reply(http::error_response(req, common::Errc::kUnavailable, "too many MCP requests in progress"));
    }
    ++calls.running;
    ++in_flight_;
  } else {
    if (calls.waiting.size() >= kMaxMcpWaitingPerUser)
      co_return reply(http::error_response(
          req, common::Errc::kUnavailable,
          fmt::format("too many MCP requests of yours waiting (at most {} run at once, {} wait)", kMaxMcpPerUser,
                      kMaxMcpWaitingPerUser)));
    // A call of this user that ends hands its thread over by cancelling this timer.
    auto turn = std::make_shared<asio::steady_timer>(io_, asio::steady_timer::time_point::max());
    calls.waiting.push_back(turn);
    boost::system::error_code ec;
    co_await turn->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    waited = true;
  }
  mcp::McpHttpHeaders headers{std::string(req["Mcp-Session-Id"]), std::string(req[http::field::content_type]),
                              std::string(req[http::field::accept])};
  const std::string method(req.method_string());
  const std::string token = gateway::Authenticator::presented_token(req);
  mcp::McpServer& server = *server_;
  // Runs on the pool; the co_await resumes this coroutine back on the io thread. Named values only in the
  // co_await operand: GCC 12 can destroy temporaries there twice.
  auto work = [&]() -> awaitable<mcp::McpHttpResult> {
    co_return mcp::handle_mcp_http(server, method, headers, req.body(), token);
  };
  auto pool = threads_->get_executor();
  Release release{*this, user};
  if (waited && call.caller.peer.gone()) {
    // Its client gave up while it waited (a timeout, a cancelled agent): running it now would run code
    // nobody waits for, and a client that retries would have it run twice. The turn goes on at once.
    common::log_info("user={} msg=\"MCP call dropped: its client closed the connection while it waited\"", user);
    co_return reply(http::error_response(req, common::Errc::kUnavailable, "the client closed the connection"));
  }
  mcp::McpHttpResult result = co_await asio::co_spawn(pool, work, asio::use_awaitable);

  http::Response res{static_cast<http::status>(result.status), req.version()};
  for (const auto& [name, value] : result.headers) res.set(name, value);
  res.set(http::field::access_control_expose_headers, "Mcp-Session-Id");
  res.set(http::field::cache_control, "no-store");
  res.keep_alive(req.keep_alive());
  res.body() = std::move(result.body);
  res.prepare_payload();
  co_return reply(std::move(res));
}

}  // namespace cellgate::api
