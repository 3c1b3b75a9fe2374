// SPDX-License-Identifier: BSD-3-Clause
// execute_api: POST /api/kernels/{id}/execute, as one JSON object or as NDJSON lines.
#include <deque>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl.hpp>

#include "gateway/agent_exec.h"
#include "gateway/gateway.h"

namespace cellgate::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
using asio::awaitable;
using common::Errc;
using nlohmann::json;

namespace {
constexpr auto kDump = [](const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); };

bool wants_ndjson(const Request& req) {
  return std::string_view(req[http::field::accept].data(), req[http::field::accept].size())
             .find("application/x-ndjson") != std::string_view::npos;
}

struct StreamLines {
  std::deque<std::string> lines;
  bool done = false;
  asio::steady_timer wake;
  explicit StreamLines(asio::any_io_executor ex) : wake(ex) {}
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

template <class Stream>
awaitable<void> Gateway::handle_stream(Stream& stream, Request req, std::string peer_ip) {
  boost::system::error_code ec;
  auto fail = [&](Response& res) -> awaitable<void> {
    add_cors(req, res);
    co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
  };
  const std::string id = kernel_id_of_execute(req, config_.base_url);
  auto exec = parse_exec_request(req.body(), config_.execute_output_bytes);
  Response refusal;
  auto caller = authenticate(req, peer_ip, refusal);
  auto hub = caller ? find_kernel(id, *caller) : nullptr;
  if (!caller) {
    // refusal says why
  } else if (!hub) refusal = error_response(req, Errc::kNotFound, "Kernel does not exist: " + id);
  else if (!exec) refusal = error_response(req, exec.error());
  if (refusal.result() != http::status::ok) co_return co_await fail(refusal);

  http::response<http::empty_body> head{http::status::ok, req.version()};
  head.set(http::field::content_type, "application/x-ndjson");
  head.set(http::field::cache_control, "no-store");
  head.set(http::field::server, "cellgate");
  head.keep_alive(req.keep_alive());
  head.chunked(true);
  http::response_serializer<http::empty_body> sr{head};
  co_await http::async_write_header(stream, sr, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return;

  // Outputs arrive from the hub's callbacks; this loop writes them as chunks, one JSON object per line.
  auto shared = std::make_shared<StreamLines>(stream.get_executor());
  asio::co_spawn(
      stream.get_executor(), execute_into(hub, shared, std::move(exec.value())),
      [shared](std::exception_ptr) {
        shared->done = true;
        shared->wake.cancel();
      });
  while (true) {
    while (!shared->lines.empty()) {
      std::string line = std::move(shared->lines.front());
      shared->lines.pop_front();
      // Named, not a temporary in the co_await operand: GCC 12 can destroy such temporaries twice.
      auto chunk = http::make_chunk(asio::buffer(line));
      co_await asio::async_write(stream, chunk, asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return;  // the client left; the execution finishes on its own
    }
    if (shared->done) break;
    shared->wake.expires_at(asio::steady_timer::time_point::max());
    co_await shared->wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  auto last = http::make_chunk_last();
  co_await asio::async_write(stream, last, asio::redirect_error(asio::use_awaitable, ec));
}

template awaitable<void> Gateway::handle_stream<PlainStream>(PlainStream&, Request, std::string);
template awaitable<void> Gateway::handle_stream<TlsStream>(TlsStream&, Request, std::string);

}  // namespace cellgate::gateway
