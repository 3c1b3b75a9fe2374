// SPDX-License-Identifier: BSD-3-Clause
// gateway: the server's state (kernels, sessions, kernelspecs) and the REST route table.
#include "gateway/gateway.h"

#include <sys/stat.h>

#include <filesystem>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/write.hpp>
#include <fmt/core.h>

#include "common/log.h"
#include "common/random.h"
#include "gateway/ws_session.h"
#include "kernel-launcher/kernel_env.h"
#include "mcp/http_backend.h"
#include "mcp/server.h"
#include "protocol/signer.h"

namespace cellgate::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
using asio::awaitable;
using common::Errc;
using common::make_error;

namespace {

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (end > start) parts.push_back(percent_decode(path.substr(start, end - start)));
    start = end + 1;
  }
  return parts;
}

void make_dirs(const std::string& path, mode_t mode) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  ::chmod(path.c_str(), mode);
}

}  // namespace

Gateway::Gateway(asio::io_context& io, Config config) : io_(io), config_(std::move(config)) {
  if (config_.spawner == "plain") {
    spawner_ = launcher::make_plain_spawner();
  } else {
    if (::access(config_.jail_helper.c_str(), X_OK) != 0)
      throw ConfigError("jail helper not found at " + config_.jail_helper + " (use --jail-helper or --spawner plain)");
    spawner_ = launcher::make_jail_spawner(config_.jail_helper, {});
  }
  kernelspec_path_ = launcher::kernelspec_search_path(config_.kernelspec_dirs);
  make_dirs(config_.data_dir, 0700);
  // The runtime root is root-only: per-kernel dirs under it are opened up to their kernel alone.
  make_dirs(config_.runtime_dir + "/k", 0700);
  ::chmod(config_.runtime_dir.c_str(), 0700);
  if (kernelspecs().count(config_.default_kernel) == 0)
    common::log_warn("msg=\"default kernelspec not found\" name={}", config_.default_kernel);
}

Gateway::~Gateway() {
  // MCP calls in flight wait on this gateway's own (now stopped) server: fail them so the pool can join.
  if (mcp_backend_) mcp_backend_->stop();
  if (mcp_pool_) mcp_pool_->join();
}

std::map<std::string, launcher::KernelSpec> Gateway::kernelspecs() const {
  return launcher::discover_kernelspecs(kernelspec_path_);
}

bool Gateway::authorized(const Request& req) const {
  std::string_view presented;
  std::string from_query;
  auto auth = req[http::field::authorization];
  if (auth.starts_with("token ")) presented = std::string_view(auth.data() + 6, auth.size() - 6);
  else if (auth.starts_with("Bearer ")) presented = std::string_view(auth.data() + 7, auth.size() - 7);
  if (presented.empty()) {
    from_query = query_param(std::string_view(req.target().data(), req.target().size()), "token");
    presented = from_query;
  }
  return protocol::constant_time_equal(presented, config_.token);
}

bool Gateway::origin_allowed(const Request& req) const {
  auto origin = req[http::field::origin];
  if (origin.empty()) return true;  // not a browser
  for (const auto& o : config_.allow_origins)
    if (o == "*" || o == origin) return true;
  // Same origin: the Origin's host:port equals Host.
  std::string_view o(origin.data(), origin.size());
  auto scheme = o.find("://");
  if (scheme != std::string_view::npos) o = o.substr(scheme + 3);
  return o == std::string_view(req[http::field::host].data(), req[http::field::host].size());
}

void Gateway::add_cors(const Request& req, Response& res) const {
  auto origin = req[http::field::origin];
  if (origin.empty() || config_.allow_origins.empty() || !origin_allowed(req)) return;
  bool any = std::find(config_.allow_origins.begin(), config_.allow_origins.end(), "*") != config_.allow_origins.end();
  res.set(http::field::access_control_allow_origin, any ? std::string("*") : std::string(origin));
  res.set(http::field::vary, "Origin");
}

awaitable<Response> Gateway::handle(Request req) {
  Response res;
  try {
    res = co_await route(req);
  } catch (const std::exception& e) {
    common::log_error("method={} path={} msg=\"unexpected error\" error=\"{}\"", std::string(req.method_string()),
                      std::string(target_path(std::string_view(req.target().data(), req.target().size()))), e.what());
    res = error_response(req, Errc::kInternal, "internal error");
  }
  add_cors(req, res);
  res.set(http::field::server, "cellgate");
  co_return res;
}

awaitable<Response> Gateway::route(Request& req) {
  std::string_view target(req.target().data(), req.target().size());
  std::string_view path = target_path(target);
  common::log_debug("method={} path={}", std::string(req.method_string()), std::string(path));
  if (req.method() == http::verb::options) {
    // CORS preflight: browsers send it without credentials.
    if (!origin_allowed(req) || config_.allow_origins.empty())
      co_return error_response(req, Errc::kForbidden, "origin not allowed");
    Response res = empty_response(req);
    res.set(http::field::access_control_allow_methods, "GET, POST, PATCH, PUT, DELETE, OPTIONS");
    res.set(http::field::access_control_allow_headers, "Authorization, Content-Type, X-XSRFToken, Mcp-Session-Id");
    res.set(http::field::access_control_max_age, "600");
    co_return res;
  }
  if (!path.starts_with(config_.base_url) && path.size() + 1 != config_.base_url.size())
    co_return error_response(req, Errc::kNotFound, "not found");
  if (!authorized(req)) co_return error_response(req, Errc::kUnauthorized, "missing or invalid token");
  auto parts = split_path(path.size() >= config_.base_url.size() ? path.substr(config_.base_url.size()) : "");
  if (!parts.empty() && parts[0] == "kernelspecs") co_return co_await handle_kernelspecs(*this, req, parts);
  if (parts.size() == 1 && parts[0] == "mcp") co_return co_await handle_mcp(req);
  if (parts.empty() || parts[0] != "api") co_return error_response(req, Errc::kNotFound, "not found");
  if (parts.size() == 1 && req.method() == http::verb::get)
    co_return json_response(req, http::status::ok, {{"version", "2.0.0"}, {"implementation", "cellgate 0.1.0"}});
  if (parts[1] == "status" && parts.size() == 2 && req.method() == http::verb::get) {
    int conns = 0;
    common::SystemTime last = started_;
    for (const auto& [id, hub] : kernels_) {
      conns += hub->connections();
      last = std::max(last, hub->kernel().last_activity());
    }
    co_return json_response(req, http::status::ok,
                            {{"started", common::iso8601(started_)},
                             {"last_activity", common::iso8601(last)},
                             {"kernels", kernels_.size()},
                             {"connections", conns}});
  }
  if (parts[1] == "kernelspecs") co_return co_await handle_kernelspecs(*this, req, parts);
  if (parts[1] == "kernels") co_return co_await handle_kernels(*this, req, parts);
  if (parts[1] == "sessions") co_return co_await handle_sessions(*this, req, parts);
  co_return error_response(req, Errc::kNotFound, "not found");
}

awaitable<void> Gateway::handle_upgrade(beast::tcp_stream stream, Request req) {
  std::string_view target(req.target().data(), req.target().size());
  std::string_view path = target_path(target);
  auto reply = [&](Response& res) -> awaitable<void> {
    res.keep_alive(false);
    boost::system::error_code ec;
    co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
    stream.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
  };
  auto parts = path.starts_with(config_.base_url) ? split_path(path.substr(config_.base_url.size()))
                                                  : std::vector<std::string>{};
  const bool is_channels = parts.size() == 4 && parts[0] == "api" && parts[1] == "kernels" && parts[3] == "channels";
  auto hub = is_channels ? find_kernel(parts[2]) : nullptr;
  std::string session_id = query_param(target, "session_id");
  if (session_id.empty()) session_id = common::random_uuid();
  // Refusals are built into a named response: GCC 12 can destroy temporaries in a co_await operand twice.
  Response refusal;
  if (!authorized(req)) refusal = error_response(req, Errc::kUnauthorized, "missing or invalid token");
  else if (!origin_allowed(req)) refusal = error_response(req, Errc::kForbidden, "origin not allowed");
  else if (!is_channels) refusal = error_response(req, Errc::kNotFound, "no WebSocket here");
  else if (!hub) refusal = error_response(req, Errc::kNotFound, "no such kernel " + parts[2]);
  else if (session_id.size() > 256) refusal = error_response(req, Errc::kBadRequest, "session_id too long");
  if (refusal.result() != http::status::ok) co_return co_await reply(refusal);
  auto proto = protocol::WsProtocol::kLegacy;
  std::string_view offered(req[http::field::sec_websocket_protocol].data(), req[http::field::sec_websocket_protocol].size());
  while (!offered.empty()) {
    auto comma = offered.find(',');
    auto item = offered.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item == protocol::kV1Subprotocol) proto = protocol::WsProtocol::kV1;
    if (comma == std::string_view::npos) break;
    offered.remove_prefix(comma + 1);
  }
  WsLimits limits{config_.max_ws_message_bytes, config_.ws_queue_bytes, config_.ws_ping_interval_s};
  auto session = std::make_shared<WsSession>(WsSession::Stream(std::move(stream)), hub, session_id, proto, limits);
  co_await session->run(std::move(req));
}

std::shared_ptr<KernelHub> Gateway::find_kernel(const std::string& id) const {
  auto it = kernels_.find(id);
  return it == kernels_.end() ? nullptr : it->second;
}

nlohmann::json Gateway::kernel_model(const KernelHub& hub) const {
  auto& k = const_cast<KernelHub&>(hub).kernel();
  nlohmann::json m = {{"id", k.id()},
                      {"name", k.name()},
                      {"last_activity", common::iso8601(k.last_activity())},
                      {"execution_state", launcher::to_string(k.state())},
                      {"connections", hub.connections()}};
  if (!k.reason().empty() && k.reason() != "shutdown") m["reason"] = k.reason();
  return m;
}

awaitable<common::Result<std::shared_ptr<KernelHub>>> Gateway::start_kernel(StartOptions options) {
  std::string name = options.name.empty() ? config_.default_kernel : options.name;
  if (!launcher::valid_kernelspec_name(name)) co_return make_error(Errc::kBadRequest, "invalid kernel name");
  auto specs = kernelspecs();
  auto spec = specs.find(name);
  if (spec == specs.end()) co_return make_error(Errc::kNotFound, "No such kernel named " + name);
  if (config_.max_kernels > 0 && static_cast<int>(kernels_.size()) + starting_ >= config_.max_kernels)
    co_return make_error(Errc::kForbidden, fmt::format("Resource Limit: max_kernels ({}) reached", config_.max_kernels));
  auto client_env = launcher::filter_client_env(options.env, config_.allow_env);
  if (!client_env) co_return client_env.error();

  launcher::KernelOptions ko;
  ko.kernel_id = common::random_uuid();
  ko.spec = spec->second;
  ko.runtime_dir = config_.runtime_dir + "/k/" + ko.kernel_id;
  ko.workspace_dir = config_.data_dir + "/workspaces/default/default";
  make_dirs(ko.workspace_dir, 0755);
  std::map<std::string, std::string> forced = {{"KERNEL_ID", ko.kernel_id}};
  if (config_.spawner == "plain") forced["HOME"] = ko.workspace_dir;
  ko.env = launcher::build_kernel_env(ko.spec, client_env.value(), forced);
  ko.transport = config_.transport;
  ko.policy_file = config_.jail_policy;
  ko.limits = config_.limits;
  ko.start_timeout = std::chrono::seconds(config_.kernel_start_timeout_s);
  ko.shutdown_grace = std::chrono::milliseconds(config_.shutdown_grace_ms);

  auto kernel = std::make_shared<launcher::Kernel>(io_, zmq_, *spawner_, std::move(ko));
  auto hub = std::make_shared<KernelHub>(kernel, config_.replay_bytes);
  kernel->set_observer(hub.get());
  hub->set_execute_limit(std::chrono::seconds(config_.execute_limit_s));
  kernels_[kernel->id()] = hub;
  ++starting_;
  auto st = co_await kernel->start();
  --starting_;
  if (!st) {
    kernels_.erase(kernel->id());
    common::log_error("kernel={} msg=\"kernel failed to start\" error=\"{}\"", kernel->id(), st.error().message);
    co_return make_error(st.error().code == Errc::kTimeout ? Errc::kTimeout : Errc::kInternal,
                         "kernel failed to start: " + st.error().message);
  }
  common::log_info("kernel={} name={} msg=\"kernel started\"", kernel->id(), name);
  co_return hub;
}

awaitable<void> Gateway::delete_kernel(const std::string& id) {
  auto hub = find_kernel(id);
  if (!hub) co_return;
  kernels_.erase(id);
  sessions_.remove_for_kernel(id);
  hub->close_all("kernel deleted");
  co_await hub->kernel().shutdown();
  common::log_info("kernel={} msg=\"kernel deleted\"", id);
}

awaitable<void> Gateway::shutdown_all() {
  auto ids = std::vector<std::string>();
  for (const auto& [id, hub] : kernels_) ids.push_back(id);
  for (const auto& id : ids) co_await delete_kernel(id);
}

}  // namespace cellgate::gateway
