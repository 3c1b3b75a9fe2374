// SPDX-License-Identifier: BSD-3-Clause
// gateway: the server's state (users, kernels, sessions, workspaces) and the REST route table.
#include "gateway/gateway.h"

#include <signal.h>
#include <unistd.h>

#include <fmt/core.h>

#include "common/log.h"
#include "common/random.h"
#include "gateway/runtime_dirs.h"
#include "gateway/snapshot_index.h"
#include "kernel-launcher/kernel_env.h"
#include "kernel-launcher/spawn_util.h"
#include "mcp/http_backend.h"
#include "mcp/server.h"
#include "protocol/signer.h"
#include "state/kernel_records.h"

namespace cellgate::gateway {

namespace asio = boost::asio;
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

std::string_view presented_token(const Request& req, std::string& storage) {
  auto auth = req[http::field::authorization];
  if (auth.starts_with("token ")) return {auth.data() + 6, auth.size() - 6};
  if (auth.starts_with("Bearer ")) return {auth.data() + 7, auth.size() - 7};
  storage = query_param(std::string_view(req.target().data(), req.target().size()), "token");
  return storage;
}

}  // namespace

Gateway::Gateway(asio::io_context& io, Config config)
    : io_(io), config_(std::move(config)),
      limiter_(state::AuthRateLimiter::Options{config_.auth_failures_per_minute, std::chrono::seconds(60),
                                               std::chrono::seconds(60), 10000}) {
  prepare_runtime_dirs(config_);
  read_budget_ = std::make_shared<launcher::ReadBudget>(config_.kernel_read_budget);
  if (config_.spawner == "plain") {
    spawner_ = launcher::make_plain_spawner();
  } else {
    if (::access(config_.jail_helper.c_str(), X_OK) != 0)
      throw ConfigError("jail helper not found at " + config_.jail_helper + " (use --jail-helper or --spawner plain)");
    auto jail = launcher::make_jail_spawner(config_.jail_helper, {});
    if (config_.fork_server && start_zygote()) {
      spawner_ = launcher::make_zygote_spawner(zygote_socket(), std::move(jail), {});
    } else {
      spawner_ = std::move(jail);
    }
  }
  kernelspec_path_ = launcher::kernelspec_search_path(config_.kernelspec_dirs);
  make_dirs(config_.data_dir, 0700);
  // One node per PostgreSQL database until cluster membership lands (docs/cluster.md); a database that
  // starts after the gateway (a Kubernetes rollout) is waited for.
  state::DatabaseOptions db_options;
  db_options.single_node = true;
  db_options.connect_wait = std::chrono::seconds(30);
  auto db = state::Database::connect(config_.database, config_.data_dir, db_options);
  if (!db) throw ConfigError("cannot open the state database: " + db.error().message);
  db_ = std::make_unique<state::Database>(std::move(db.value()));
  users_ = std::make_unique<state::UserStore>(*db_);
  users_->set_single_token(config_.token);
  auto audit = state::AuditLog::open(*db_, config_.data_dir);
  if (!audit) throw ConfigError("cannot open the audit log: " + audit.error().message);
  audit_ = std::make_unique<state::AuditLog>(std::move(audit.value()));
  workspace::WorkspaceConfig wc;
  wc.max_bytes = config_.workspace_bytes;
  wc.max_files = config_.workspace_files;
  wc.keep_auto = config_.snapshot_keep;
  wc.tree_uid = 1000;  // the jail's `sandbox` user owns workspace trees on disk (idmapped into each jail)
  wc.tree_gid = 1000;
  auto ws = workspace::WorkspaceManager::open(config_.data_dir, wc);
  if (!ws) throw ConfigError("cannot open the workspace store: " + ws.error().message);
  workspaces_ = std::move(ws.value());
  // The store is the truth for content: rows it has no snapshot for go, snapshots without a row get one.
  auto reconciled = reconcile_snapshot_index(*db_, *workspaces_);
  if (!reconciled) throw ConfigError("cannot reconcile the snapshot index: " + reconciled.error().message);
  if (reconciled->rebuilt || reconciled->dropped)
    common::log_info("msg=\"snapshot index reconciled with the store\" rebuilt={} dropped={}", reconciled->rebuilt,
                     reconciled->dropped);
  if (!config_.seed_notebook.empty()) {
    auto seed = load_seed(config_.seed_notebook);
    if (!seed) throw ConfigError("--seed-notebook: " + seed.error().message);
    if (seed.value()->language.empty() && seed.value()->kernel_name.empty())
      throw ConfigError("--seed-notebook: " + config_.seed_notebook +
                        " declares no language (metadata.kernelspec.language or metadata.language_info.name)");
    global_seed_ = seed.value();
  }
  if (!config_.notebook_http.empty()) notebook_http_ = std::make_unique<NotebookHttp>(config_, kernelspecs());
  if (kernelspecs().count(config_.default_kernel) == 0)
    common::log_warn("msg=\"default kernelspec not found\" name={}", config_.default_kernel);
  schedule_cull();
  schedule_pause();
  start_pool();
}

std::string Gateway::zygote_socket() const { return config_.runtime_dir + "/zygote.sock"; }

bool Gateway::start_zygote() {
  if (::access(config_.zygote_binary.c_str(), X_OK) != 0) {
    common::log_warn("msg=\"fork server not found; kernels start cold\" path={}", config_.zygote_binary);
    return false;
  }
  // Its own session (spawn_process), so it is not tied to our terminal; a zygote left by an earlier
  // gateway is replaced (the new one renames its socket over the old, which then exits). Until it has
  // preloaded (a few seconds), and whenever it is gone, kernels start cold.
  auto z = launcher::spawn_process({config_.zygote_binary, "--socket", zygote_socket(), "--parent-pid", std::to_string(::getpid())},
                                   {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}}, "/", config_.runtime_dir + "/zygote.log", -1);
  if (!z) {
    common::log_warn("msg=\"fork server did not start; kernels start cold\" error=\"{}\"", z.error().message);
    return false;
  }
  zygote_ = std::move(z.value());
  common::log_info("msg=\"fork server starting\" pid={} socket={}", zygote_.pid, zygote_socket());
  watch_zygote();
  return true;
}

void Gateway::watch_zygote() {
  constexpr auto kZygoteRestartDelay = std::chrono::seconds(5);
  zygote_watch_ = std::make_unique<launcher::ExitWatch>(io_.get_executor(), zygote_.pidfd.get());
  zygote_watch_->async_wait([this, kZygoteRestartDelay] {
    if (zygote_.pid <= 0) return;  // we are stopping it
    int status = launcher::reap(zygote_);
    common::log_warn("msg=\"fork server exited; kernels start cold until it is back\" pid={} status=\"{}\"", zygote_.pid,
                     launcher::describe_wait_status(status));
    zygote_.pid = -1;
    if (!zygote_timer_) zygote_timer_ = std::make_unique<asio::steady_timer>(io_);
    zygote_timer_->expires_after(kZygoteRestartDelay);
    zygote_timer_->async_wait([this](const boost::system::error_code& tec) {
      if (!tec) start_zygote();
    });
  });
}

void Gateway::stop_zygote() {
  if (zygote_timer_) zygote_timer_->cancel();
  if (zygote_.pid <= 0) return;
  ::kill(zygote_.pid, SIGTERM);  // it removes its socket and exits; the kernels it forked stay
  for (int i = 0; i < 100 && launcher::reap(zygote_) < 0; ++i) ::usleep(10000);
  zygote_.pid = -1;
  if (zygote_watch_) zygote_watch_->cancel();
}

Gateway::~Gateway() {
  stop_zygote();
  // MCP calls in flight wait on this gateway's own (now stopped) server: fail them so the pool can join.
  if (mcp_backend_) mcp_backend_->stop();
  if (mcp_pool_) mcp_pool_->join();
  pool_.join();
}

std::map<std::string, launcher::KernelSpec> Gateway::kernelspecs() const {
  return launcher::discover_kernelspecs(kernelspec_path_);
}

workspace::WorkspaceConfig Gateway::workspace_config(const state::User& user) const {
  auto wc = workspaces_->config();
  if (user.limits.workspace_bytes) wc.max_bytes = static_cast<uint64_t>(*user.limits.workspace_bytes);
  if (user.limits.workspace_files) wc.max_files = static_cast<uint64_t>(*user.limits.workspace_files);
  return wc;
}

void Gateway::audit(const Caller& caller, const std::string& action, const std::string& kind, const std::string& id,
                    nlohmann::json detail, bool ok) {
  auto st = audit_->record({caller.user.name, action, kind, id, std::move(detail), ok});
  if (!st) common::log_error("msg=\"audit log write failed\" error=\"{}\"", st.error().message);
}

std::optional<Caller> Gateway::authenticate(const Request& req, const http::Peer& peer, Response& refusal) {
  const std::string& ip = peer.ip;
  std::string storage;
  const std::string_view token = presented_token(req, storage);
  // The database could not say whose token it is (PostgreSQL unreachable): 503, and no failure is
  // counted against the client, whose token may well be good.
  auto lookup = users_->authenticate(token);
  if (!lookup) {
    refusal = error_response(req, lookup.error().code == Errc::kUnavailable ? Errc::kUnavailable : Errc::kInternal,
                             "cannot check the token: " + lookup.error().message);
    return std::nullopt;
  }
  auto& user = lookup.value();
  if (int wait = limiter_.retry_after(ip); wait > 0) {
    // The block is there to stop online guessing, and a token the gateway generated (256 bits: every
    // `cellgate user add` token, and --token when not given) cannot be guessed online: a valid one
    // still gets in, so that on a shared address (a JupyterHub node, a NAT) one client's failures do
    // not lock everyone else out. A hand-picked --token, however long, may be a guessable phrase: it
    // stays behind the block.
    if (user && (config_.token_generated || token != config_.token)) return Caller{std::move(*user), peer};
    refusal = error_response(req, Errc::kUnauthorized, "too many failed authentications; retry later");
    refusal.result(http::status::too_many_requests);
    refusal.body() = nlohmann::json{{"reason", "Too Many Requests"},
                                    {"message", "too many failed authentications; retry later"}}.dump();
    refusal.set(http::field::retry_after, std::to_string(wait));
    refusal.prepare_payload();
    return std::nullopt;
  }
  if (!user) {
    if (limiter_.record_failure(ip)) common::log_warn("ip={} msg=\"authentication failures; blocking\"", ip);
    refusal = error_response(req, Errc::kUnauthorized, "missing or invalid token");
    return std::nullopt;
  }
  return Caller{std::move(*user), peer};
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

awaitable<http::Reply> Gateway::handle(Request req, http::Peer peer) {
  http::Reply reply;
  Response& res = reply.res;
  try {
    std::string_view path = target_path(std::string_view(req.target().data(), req.target().size()));
    common::log_debug("method={} path={}", std::string(req.method_string()), std::string(path));
    if (req.method() == http::verb::options) {
      // CORS preflight: browsers send it without credentials.
      if (!origin_allowed(req) || config_.allow_origins.empty()) {
        res = error_response(req, Errc::kForbidden, "origin not allowed");
      } else {
        res = empty_response(req);
        res.set(http::field::access_control_allow_methods, "GET, POST, PATCH, PUT, DELETE, OPTIONS");
        res.set(http::field::access_control_allow_headers, "Authorization, Content-Type, Accept, X-XSRFToken, Mcp-Session-Id");
        res.set(http::field::access_control_max_age, "600");
      }
    } else if (notebook_http_) {
      // notebook-http serves the notebook's endpoints and nothing else; the token is required unless
      // the operator made them public.
      if (config_.notebook_http_public || authenticate(req, peer, res)) {
        std::string rel(path.starts_with(config_.base_url) ? path.substr(config_.base_url.size() - 1) : "");
        if (rel.empty()) res = error_response(req, Errc::kNotFound, "not found");
        else res = co_await notebook_http_->handle(req, std::move(rel));
      }
    } else if (is_stream_request(req)) {
      reply = co_await handle_stream(req, peer);
    } else if (auto caller = authenticate(req, peer, res)) {
      // HEAD is GET without the body (RFC 9110 9.3.2): routed as GET, so every GET resource answers it
      // with the same status and headers (a file's Content-Length among them); the session drops the body.
      if (req.method() == http::verb::head) req.method(http::verb::get);
      res = co_await route(req, *caller);
      reply.file = file_replies_.take(res);
    }
  } catch (const std::exception& e) {
    common::log_error("method={} msg=\"unexpected error\" error=\"{}\"", std::string(req.method_string()), e.what());
    reply = http::Reply{error_response(req, Errc::kInternal, "internal error"), {}, {}};
  }
  add_cors(req, reply.res);
  reply.res.set(http::field::server, "cellgate");
  co_return reply;
}

awaitable<Response> Gateway::route(Request& req, const Caller& caller) {
  std::string_view path = target_path(std::string_view(req.target().data(), req.target().size()));
  if (!path.starts_with(config_.base_url) && path.size() + 1 != config_.base_url.size())
    co_return error_response(req, Errc::kNotFound, "not found");
  auto parts = split_path(path.size() >= config_.base_url.size() ? path.substr(config_.base_url.size()) : "");
  if (!parts.empty() && parts[0] == "kernelspecs") co_return co_await handle_kernelspecs(*this, req, parts);
  if (parts.size() == 1 && parts[0] == "mcp") co_return co_await handle_mcp(req, caller);
  if (parts.empty() || parts[0] != "api") co_return error_response(req, Errc::kNotFound, "not found");
  if (parts.size() == 1) {
    // Any other method on /api must stop here: everything below reads parts[1].
    if (req.method() != http::verb::get) co_return method_not_allowed(req);
    co_return json_response(req, http::status::ok, {{"version", "2.0.0"}, {"implementation", "cellgate 0.1.0"}});
  }
  const std::string& what = parts[1];
  if (what == "status" && parts.size() == 2 && req.method() == http::verb::get) {
    int conns = 0, count = 0;
    common::SystemTime last = started_;
    for (const auto& [id, hub] : kernels_) {
      if (!caller.sees(*hub)) continue;
      ++count;
      conns += hub->connections();
      last = std::max(last, hub->kernel().last_activity());
    }
    nlohmann::json status = {{"started", common::iso8601(started_)},
                             {"last_activity", common::iso8601(last)},
                             {"kernels", count},
                             {"connections", conns}};
    if (kernel_pool_ && caller.user.admin) status["pool"] = kernel_pool_->status();
    if (caller.user.admin) {
      size_t waiting = 0;
      for (const auto& [user, calls] : mcp_users_) waiting += calls.waiting.size();
      status["mcp"] = {{"running", mcp_in_flight_}, {"waiting", waiting}};
    }
    co_return json_response(req, http::status::ok, status);
  }
  if (what == "me" && parts.size() == 2)
    co_return json_response(req, http::status::ok, {{"name", caller.user.name}, {"admin", caller.user.admin}});
  if (what == "kernelspecs") co_return co_await handle_kernelspecs(*this, req, parts);
  if (what == "kernels") co_return co_await handle_kernels(*this, req, caller, parts);
  if (what == "sessions") co_return co_await handle_sessions(*this, req, caller, parts);
  if (what == "workspaces") co_return co_await handle_workspaces(*this, req, caller, parts);
  co_return error_response(req, Errc::kNotFound, "not found");
}

awaitable<http::Upgrade> Gateway::upgrade(Request& req, http::Peer peer) {
  std::string_view target(req.target().data(), req.target().size());
  std::string_view path = target_path(target);
  auto parts = path.starts_with(config_.base_url) ? split_path(path.substr(config_.base_url.size()))
                                                  : std::vector<std::string>{};
  const bool is_channels = !notebook_http_ && parts.size() == 4 && parts[0] == "api" && parts[1] == "kernels" &&
                           parts[3] == "channels";
  std::string session_id = query_param(target, "session_id");
  if (session_id.empty()) session_id = common::random_uuid();
  Response refusal;
  auto caller = authenticate(req, peer, refusal);
  auto hub = caller && is_channels ? find_kernel(parts[2], *caller) : nullptr;
  if (!caller) {
    // refusal already says why
  } else if (!origin_allowed(req)) {
    refusal = error_response(req, Errc::kForbidden, "origin not allowed");
  } else if (!is_channels) {
    refusal = error_response(req, Errc::kNotFound, "no WebSocket here");
  } else if (!hub) {
    refusal = error_response(req, Errc::kNotFound, "no such kernel " + parts[2]);
  } else if (session_id.size() > 256) {
    refusal = error_response(req, Errc::kBadRequest, "session_id too long");
  } else if (int64_t cap = max_connections(caller->user); cap > 0 && (*ws_open_)[caller->user.name] >= cap) {
    refusal = error_response(req, Errc::kForbidden,
                             fmt::format("quota exceeded: max_connections ({}) open WebSockets for user {}", cap,
                                         caller->user.name));
  }
  if (refusal.result() != http::status::ok) co_return refusal;
  // Counted until the connection ends; the counter is shared so a lease outliving the gateway is safe.
  class OpenSocket {
   public:
    OpenSocket(std::shared_ptr<std::map<std::string, int>> counts, std::string user)
        : counts_(std::move(counts)), user_(std::move(user)) {
      ++(*counts_)[user_];
    }
    OpenSocket(const OpenSocket&) = delete;
    OpenSocket& operator=(const OpenSocket&) = delete;
    ~OpenSocket() {
      if (--(*counts_)[user_] <= 0) counts_->erase(user_);
    }

   private:
    std::shared_ptr<std::map<std::string, int>> counts_;
    std::string user_;
  };
  auto lease = std::make_shared<OpenSocket>(ws_open_, caller->user.name);
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
  http::WsLimits limits{config_.max_ws_message_bytes, config_.ws_queue_bytes, config_.ws_ping_interval_s};
  co_return http::WsAccept{hub, session_id, proto, limits, std::move(lease)};
}

int64_t Gateway::max_connections(const state::User& user) const {
  return user.limits.max_connections ? *user.limits.max_connections : config_.max_connections_per_user;
}

std::shared_ptr<KernelHub> Gateway::find_kernel(const std::string& id, const Caller& caller) const {
  auto it = kernels_.find(id);
  if (it == kernels_.end() || !caller.sees(*it->second)) return nullptr;
  return it->second;
}

nlohmann::json Gateway::kernel_model(const KernelHub& hub) const {
  auto& k = const_cast<KernelHub&>(hub).kernel();
  nlohmann::json m = {{"id", k.id()},
                      {"name", k.name()},
                      {"last_activity", common::iso8601(k.last_activity())},
                      {"execution_state", launcher::to_string(k.state())},
                      {"paused", k.paused()},
                      {"connections", hub.connections()},
                      {"owner", hub.owner},
                      {"workspace", hub.workspace}};
  if (!k.reason().empty() && k.reason() != "shutdown") m["reason"] = k.reason();
  return m;
}

}  // namespace cellgate::gateway
