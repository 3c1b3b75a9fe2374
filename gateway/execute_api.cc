// SPDX-License-Identifier: BSD-3-Clause
// execute_api: POST /api/kernels/{id}/execute, as one JSON object or as NDJSON lines.
#include <deque>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "gateway/agent_exec.h"
#include "gateway/gateway.h"

namespace cellgate::gateway {

namespace asio = boost::asio;
using asio::awaitable;
using common::Errc;
using nlohmann::json;

namespace {
constexpr auto kDump = [](const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); };

bool wants_ndjson(const Request& req) {
  return std::string_view(req[http::field::accept].data(), req[http::field::accept].size())
             .find("application/x-ndjson") != std::string_view::npos;
}

// The NDJSON lines of one execute, as the session asks for them.
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
awaitable<void> execute_into(std::shared_ptr<KernelHub> hub, std::shared_ptr<StreamLines> shared, ExecRequest request) {
  std::function<void(const json&)> sink = [shared](const json& out) {
    shared->lines.push_back(kDump(out) + "\n");
    shared->wake.cancel();
  };
  json result = co_await run_execute(hub, std::move(request), sink);
  result.erase("outputs");  // already streamed
  result["type"] = "result";
  shared->lines.push_back(kDump(result) + "\n");
  shared->done = true;
  shared->wake.cancel();
}

std::string kernel_id_of_execute(const Request& req, const std::string& base_url) {
  std::string_view path = target_path(std::string_view(req.target().data(), req.target().size()));
  if (!path.starts_with(base_url)) return "";
  path.remove_prefix(base_url.size());
  constexpr std::string_view kPrefix = "api/kernels/";
  if (!path.starts_with(kPrefix) || !path.ends_with("/execute")) return "";
  path.remove_prefix(kPrefix.size());
  path.remove_suffix(std::string_view("/execute").size());
  // Decoded as route() decodes every path segment, so both paths find the same kernel.
  return path.find('/') == std::string_view::npos ? percent_decode(path) : "";
}
}  // namespace

awaitable<Response> handle_execute(Gateway& gw, Request& req, const Caller& caller, const std::string& kernel_id) {
  auto hub = gw.find_kernel(kernel_id, caller);
  if (!hub) co_return error_response(req, Errc::kNotFound, "Kernel does not exist: " + kernel_id);
  auto exec = parse_exec_request(req.body(), gw.config().execute_output_bytes);
  if (!exec) co_return error_response(req, exec.error());
  if (!exec->env.empty() && hub->kernel().options().spec.language != "python")
    co_return error_response(req, Errc::kBadRequest, "env is supported for python kernels only");
  json result = co_await run_execute(hub, std::move(exec.value()));
  co_return json_response(req, http::status::ok, result);
}

bool Gateway::is_stream_request(const Request& req) const {
  return !notebook_http_ && req.method() == http::verb::post && wants_ndjson(req) && !kernel_id_of_execute(req, config_.base_url).empty();
}

awaitable<http::Reply> Gateway::handle_stream(Request& req, const http::Peer& peer) {
  const std::string id = kernel_id_of_execute(req, config_.base_url);
  auto exec = parse_exec_request(req.body(), config_.execute_output_bytes);
  http::Reply reply;
  auto caller = authenticate(req, peer, reply.res);
  auto hub = caller ? find_kernel(id, *caller) : nullptr;
  if (!caller) co_return reply;  // res says why
  if (!hub) co_return http::Reply{error_response(req, Errc::kNotFound, "Kernel does not exist: " + id), {}, {}};
  if (!exec) co_return http::Reply{error_response(req, exec.error()), {}, {}};

  Response& head = reply.res;
  head = Response{http::status::ok, req.version()};
  head.set(http::field::content_type, "application/x-ndjson");
  head.set(http::field::cache_control, "no-store");
  head.keep_alive(req.keep_alive());
  // Outputs arrive from the hub's callbacks into the lines; the session writes them as chunks.
  auto ex = co_await asio::this_coro::executor;
  auto lines = std::make_shared<StreamLines>(ex);
  asio::co_spawn(ex, execute_into(hub, lines, std::move(exec.value())), [lines](std::exception_ptr) {
    lines->done = true;
    lines->wake.cancel();
  });
  reply.chunks = lines;
  co_return reply;
}

}  // namespace cellgate::gateway
