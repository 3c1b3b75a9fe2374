// SPDX-License-Identifier: BSD-3-Clause
// execute_api: the agent API's execute, as one JSON object or as NDJSON lines.
#include "gateway/api/execute_api.h"

#include <deque>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "gateway/agent_exec.h"
#include "gateway/api/kernels_api.h"
#include "gateway/kernel_hub.h"
#include "journal/entry.h"

namespace cellgate::api {

namespace asio = boost::asio;
using asio::awaitable;
using common::Errc;
using nlohmann::json;

namespace {

constexpr auto kDump = [](const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); };

std::string_view client_header(const http::Request& req) {
  auto v = req["X-Cellgate-Client"];
  return std::string_view(v.data(), v.size());
}

bool wants_ndjson(const http::Request& req) {
  return std::string_view(req[http::field::accept].data(), req[http::field::accept].size())
             .find("application/x-ndjson") != std::string_view::npos;
}

// The NDJSON lines of one execute, as the session asks for them. The execution holds the kernel's
// in-flight count until it ends, whether or not the client still reads.
struct StreamLines : http::ChunkSource {
  std::deque<std::string> lines;
  bool done = false;
  asio::steady_timer wake;
  explicit StreamLines(asio::any_io_executor ex) : wake(ex) {}

  awaitable<std::optional<std::string>> next() override {
    while (lines.empty() && !done) {
      wake.expires_at(asio::steady_timer::time_point::max());
      boost::system::error_code ec;
      co_await wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    if (lines.empty()) co_return std::nullopt;
    std::string line = std::move(lines.front());
    lines.pop_front();
    co_return line;
  }
};

// A coroutine function, not a capturing lambda: its arguments live in the coroutine frame.
awaitable<void> execute_into(std::shared_ptr<gateway::KernelHub> hub, std::shared_ptr<StreamLines> shared,
                             gateway::ExecRequest request) {
  InFlight guard(hub);
  std::function<void(const json&)> sink = [shared](const json& out) {
    shared->lines.push_back(kDump(out) + "\n");
    shared->wake.cancel();
  };
  json result = co_await gateway::run_execute(hub, std::move(request), sink);
  result.erase("outputs");  // already streamed
  result["type"] = "result";
  shared->lines.push_back(kDump(result) + "\n");
  shared->done = true;
  shared->wake.cancel();
}

}  // namespace

awaitable<http::Reply> ExecuteApi::execute(Call& call) {
  const auto& hub = call.kernel;
  wake(*hub);
  auto exec = gateway::parse_exec_request(call.req.body(), output_limit_);
  if (!exec) co_return reply(http::error_response(call.req, exec.error()));
  exec->origin = journal::Origin{call.caller.user.name, journal::claimed_client(client_header(call.req), journal::client::kExecute), ""};
  if (!wants_ndjson(call.req)) {
    if (!exec->env.empty() && hub->kernel().options().spec.language != "python")
      co_return reply(http::error_response(call.req, Errc::kBadRequest, "env is supported for python kernels only"));
    InFlight guard(hub);
    json result = co_await gateway::run_execute(hub, std::move(exec.value()));
    co_return reply(http::json_response(call.req, http::status::ok, result));
  }
  http::Reply streamed;
  http::Response& head = streamed.res;
  head = http::Response{http::status::ok, call.req.version()};
  head.set(http::field::content_type, "application/x-ndjson");
  head.set(http::field::cache_control, "no-store");
  head.keep_alive(call.req.keep_alive());
  // Outputs arrive from the hub's callbacks into the lines; the session writes them as chunks.
  auto ex = co_await asio::this_coro::executor;
  auto lines = std::make_shared<StreamLines>(ex);
  asio::co_spawn(ex, execute_into(hub, lines, std::move(exec.value())), [lines](std::exception_ptr) {
    lines->done = true;
    lines->wake.cancel();
  });
  streamed.chunks = lines;
  co_return streamed;
}

}  // namespace cellgate::api
