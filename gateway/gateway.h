// SPDX-License-Identifier: BSD-3-Clause
// gateway: the server's state (users, kernels, sessions, workspaces) and the REST route table.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include "gateway/config.h"
#include "gateway/file_replies.h"
#include "gateway/http/handler.h"
#include "gateway/kernel_hub.h"
#include "gateway/kernel_pool.h"
#include "gateway/notebook_http.h"
#include "gateway/seed.h"
#include "kernel-launcher/exit_watch.h"
#include "kernel-launcher/kernelspec.h"
#include "kernel-launcher/spawner.h"
#include "state/audit_log.h"
#include "state/database.h"
#include "state/rate_limiter.h"
#include "state/users.h"
#include "workspace/change_watch.h"
#include "workspace/workspace_manager.h"

namespace cellgate::mcp {
class HttpBackend;
class McpServer;
}  // namespace cellgate::mcp

namespace cellgate::gateway {

using http::empty_response;
using http::error_response;
using http::json_response;
using http::method_not_allowed;
using http::percent_decode;
using http::query_param;
using http::Request;
using http::Response;
using http::target_path;

// Who is asking: the authenticated user and the peer address.
struct Caller {
  state::User user;
  http::Peer peer;  // its address and connection (peer.gone(): whether the client left meanwhile)
  bool sees(const KernelHub& hub) const { return user.admin || hub.owner == user.name; }
};

// Io thread only, except the thread pool, which runs blocking filesystem work (snapshots, restores).
class Gateway : public http::Handler {
 public:
  // Owner of the warm pool's unclaimed kernels in the database (no user name has an '@').
  static constexpr const char* kPoolOwner = "@pool";
  Gateway(boost::asio::io_context& io, Config config);
  ~Gateway() override;

  const Config& config() const { return config_; }
  // The bounds of every request, for the transport.
  http::Limits limits() const { return {config_.max_header_bytes, config_.max_body_bytes}; }
  // Responses whose body is a file (archives): handlers attach, handle() takes them into the reply.
  FileReplies& file_replies() { return file_replies_; }
  // Serves one HTTP request (not an upgrade). Never throws: failures become JSON error responses.
  boost::asio::awaitable<http::Reply> handle(Request req, http::Peer peer) override;
  // Decides a WebSocket upgrade: a kernel's channels for its owner, else a refusal.
  boost::asio::awaitable<http::Upgrade> upgrade(Request& req, http::Peer peer) override;
  // Re-adopts the kernels the database says are running (after a gateway restart or crash).
  boost::asio::awaitable<void> adopt_kernels();
  // adopt_kernels, then in notebook-http mode starts the pool (after shutting down a crashed run's).
  // An error means the gateway cannot serve (notebook-http's kernels did not start).
  boost::asio::awaitable<common::Status> start_services();
  boost::asio::io_context& io() { return io_; }
  // Where the MCP endpoint's loopback calls to the REST API go (plain HTTP).
  void set_local_endpoint(std::string ip, int port) {
    local_ip_ = std::move(ip);
    local_port_ = port;
  }
  // On exit: kernels keep running (they are re-adopted next start) unless config says otherwise.
  boost::asio::awaitable<void> stop();

  // --- used by the route handlers ---
  struct StartOptions {
    std::string name;                                // kernelspec ("" = default)
    nlohmann::json env = nlohmann::json::object();
    std::string workspace;                           // "" = KERNEL_WORKSPACE or "default"
    bool ephemeral = false;
    // The seed to run instead of the kernelspec's or --seed-notebook's (notebook-http's pool).
    std::shared_ptr<const Seed> seed;
    bool snapshots = true;                           // snapshot the workspace after every execute
    std::shared_ptr<SeedFailure> seed_failure;       // filled when the seed fails, if set
  };
  boost::asio::awaitable<common::Result<std::shared_ptr<KernelHub>>> start_kernel(const Caller& caller,
                                                                                 StartOptions options);
  // By value: callers co_spawn it, and a reference would dangle by the time it resumes.
  boost::asio::awaitable<void> delete_kernel(std::string id, std::string who);
  // The kernel if it exists and the caller may see it (else null: 404, never 403, so ids are no oracle).
  std::shared_ptr<KernelHub> find_kernel(const std::string& id, const Caller& caller) const;
  nlohmann::json kernel_model(const KernelHub& hub) const;
  std::map<std::string, launcher::KernelSpec> kernelspecs() const;
  const std::map<std::string, std::shared_ptr<KernelHub>>& kernels() const { return kernels_; }
  state::Database& db() { return *db_; }
  workspace::WorkspaceManager& workspaces() { return *workspaces_; }
  // The workspace config with the caller's caps applied.
  workspace::WorkspaceConfig workspace_config(const state::User& user) const;
  void audit(const Caller& caller, const std::string& action, const std::string& kind, const std::string& id,
             nlohmann::json detail = nlohmann::json::object(), bool ok = true);
  // Runs fn on the thread pool and resumes on the io thread with its result.
  template <typename F>
  auto offload(F fn) -> boost::asio::awaitable<decltype(fn())>;

 private:
  boost::asio::awaitable<Response> route(Request& req, const Caller& caller);
  // NDJSON execute streaming: POST /api/kernels/{id}/execute with Accept: application/x-ndjson.
  bool is_stream_request(const Request& req) const;
  boost::asio::awaitable<http::Reply> handle_stream(Request& req, const http::Peer& peer);
  boost::asio::awaitable<Response> handle_mcp(Request& req, const Caller& caller);  // mcp_api.cc
  std::optional<Caller> authenticate(const Request& req, const http::Peer& peer, Response& refusal);
  bool origin_allowed(const Request& req) const;
  // Open WebSockets one user may hold (0 = no cap): the user's own limit, else the config default.
  int64_t max_connections(const state::User& user) const;
  void add_cors(const Request& req, Response& res) const;
  // listed = false: a pool kernel, in nobody's list until it is claimed.
  std::shared_ptr<KernelHub> make_hub(launcher::KernelOptions options, const std::string& owner,
                                      const std::string& workspace, const state::User* user, bool listed = true);
  // pool_claim.cc: an unstarted pool kernel for kernelspec spec, and handing a pooled kernel to a
  // caller (cold = the options a cold start would use). Null when the pool has none that fits.
  std::shared_ptr<KernelHub> make_pool_kernel(const std::string& spec);
  boost::asio::awaitable<std::shared_ptr<KernelHub>> claim_pooled(Caller caller, launcher::KernelOptions cold,
                                                                  std::string ws_name, bool ephemeral);
  // Validates --pool and builds the pool; start_services() starts filling it.
  void start_pool();
  // Transport, jail policy, limits and timeouts from the config and the kernelspec's metadata.cellgate.
  void apply_kernelspec_policy(launcher::KernelOptions& ko) const;
  // idle_pause.cc: freezes kernels idle past their pause_after.
  void schedule_pause();
  // Stops watching a deleted kernel's workspace unless another kernel uses it.
  void unwatch_if_unused(const KernelHub& gone);
  void snapshot_after_execute(const std::shared_ptr<KernelHub>& hub, protocol::Message reply,
                              std::function<void(protocol::Message)> deliver);
  void schedule_cull();
  // The fork server (cellgate-zygote) for ipykernels; false when it cannot be started. One that dies
  // is started again after kZygoteRestartDelay (kernels start cold meanwhile).
  bool start_zygote();
  void watch_zygote();
  void stop_zygote();
  std::string zygote_socket() const;

  boost::asio::io_context& io_;
  Config config_;
  boost::asio::thread_pool pool_{2};
  // Workspaces no execute has touched since their last walk are not walked again (see change_watch.h).
  workspace::ChangeWatch change_watch_;
  std::unique_ptr<launcher::Spawner> spawner_;
  launcher::ProcessHandle zygote_;  // the fork server we started (pid -1: none)
  std::unique_ptr<launcher::ExitWatch> zygote_watch_;
  std::unique_ptr<boost::asio::steady_timer> zygote_timer_;
  std::vector<std::string> kernelspec_path_;
  std::map<std::string, std::shared_ptr<KernelHub>> kernels_;
  std::map<std::string, int> starting_;  // owner → kernels being started
  std::shared_ptr<launcher::ReadBudget> read_budget_;  // every kernel's large incoming messages
  std::shared_ptr<std::map<std::string, int>> ws_open_ = std::make_shared<std::map<std::string, int>>();  // user → open WebSockets
  std::unique_ptr<state::Database> db_;
  std::unique_ptr<state::UserStore> users_;
  std::unique_ptr<state::AuditLog> audit_;
  state::AuthRateLimiter limiter_;
  std::unique_ptr<workspace::WorkspaceManager> workspaces_;
  std::unique_ptr<boost::asio::steady_timer> cull_timer_;
  std::unique_ptr<boost::asio::steady_timer> pause_timer_;
  std::unique_ptr<KernelPool> kernel_pool_;
  FileReplies file_replies_;
  common::SystemTime started_ = std::chrono::system_clock::now();
  // MCP over streamable HTTP (/mcp): tools call this gateway's REST API over loopback with the caller's
  // token, from worker threads (the calls block, and this io thread must stay free to serve them).
  std::string local_ip_;
  int local_port_ = 0;
  struct McpUserCalls {
    int running = 0;                                                  // holding a thread
    std::deque<std::shared_ptr<boost::asio::steady_timer>> waiting;  // for one of the user's slots, in order
  };
  int mcp_in_flight_ = 0;
  std::map<std::string, McpUserCalls> mcp_users_;  // no entry while a user has no call
  std::shared_ptr<mcp::HttpBackend> mcp_backend_;
  std::unique_ptr<mcp::McpServer> mcp_;
  std::unique_ptr<boost::asio::thread_pool> mcp_pool_;  // joined in ~Gateway, after the backend is stopped
  std::shared_ptr<const Seed> global_seed_;             // --seed-notebook
  std::unique_ptr<NotebookHttp> notebook_http_;         // --notebook-http: serves only the notebook's endpoints
};

// Route handlers, one file per resource.
boost::asio::awaitable<Response> handle_kernels(Gateway& gw, Request& req, const Caller& caller,
                                                const std::vector<std::string>& parts);
boost::asio::awaitable<Response> handle_kernelspecs(Gateway& gw, Request& req, const std::vector<std::string>& parts);
boost::asio::awaitable<Response> handle_execute(Gateway& gw, Request& req, const Caller& caller,
                                                const std::string& kernel_id);
boost::asio::awaitable<Response> handle_sessions(Gateway& gw, Request& req, const Caller& caller,
                                                 const std::vector<std::string>& parts);
boost::asio::awaitable<Response> handle_workspaces(Gateway& gw, Request& req, const Caller& caller,
                                                   const std::vector<std::string>& parts);
boost::asio::awaitable<Response> handle_tools(Gateway& gw, Request& req, const Caller& caller,
                                              const std::shared_ptr<KernelHub>& hub, const std::string& tool);

}  // namespace cellgate::gateway

#include "gateway/offload.h"
