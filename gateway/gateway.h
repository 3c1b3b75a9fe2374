// SPDX-License-Identifier: BSD-3-Clause
// gateway: the server's state (kernels, sessions, kernelspecs) and the REST route table.
#pragma once

#include <map>
#include <memory>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <zmq.hpp>

#include "gateway/config.h"
#include "gateway/http_types.h"
#include "gateway/kernel_hub.h"
#include "gateway/session_store.h"
#include "kernel-launcher/kernelspec.h"
#include "kernel-launcher/spawner.h"

namespace cellgate::mcp {
class HttpBackend;
class McpServer;
}  // namespace cellgate::mcp

namespace cellgate::gateway {

// Io thread only: every member is touched from the one thread that runs io_context.
class Gateway {
 public:
  Gateway(boost::asio::io_context& io, Config config);
  ~Gateway();

  const Config& config() const { return config_; }
  // Serves one HTTP request (not an upgrade). Never throws: failures become JSON error responses.
  boost::asio::awaitable<Response> handle(Request req);
  // Serves a WebSocket upgrade request on stream until the connection ends.
  boost::asio::awaitable<void> handle_upgrade(boost::beast::tcp_stream stream, Request req);
  // Requests answered by writing to the stream directly (NDJSON execute streaming).
  bool is_stream_request(const Request& req) const;
  boost::asio::awaitable<void> handle_stream(boost::beast::tcp_stream& stream, Request req);
  // Shuts every kernel down (bounded by their shutdown deadlines).
  boost::asio::awaitable<void> shutdown_all();
  // The port the gateway listens on, for the MCP endpoint's loopback calls to the REST API.
  void set_local_port(int port) { local_port_ = port; }

  // --- used by the route handlers (kernels_api.cc, sessions_api.cc) ---
  struct StartOptions {
    std::string name;                          // kernelspec ("" = default)
    nlohmann::json env = nlohmann::json::object();
  };
  boost::asio::awaitable<common::Result<std::shared_ptr<KernelHub>>> start_kernel(StartOptions options);
  boost::asio::awaitable<void> delete_kernel(const std::string& id);
  std::shared_ptr<KernelHub> find_kernel(const std::string& id) const;
  nlohmann::json kernel_model(const KernelHub& hub) const;
  std::map<std::string, launcher::KernelSpec> kernelspecs() const;
  const std::map<std::string, std::shared_ptr<KernelHub>>& kernels() const { return kernels_; }
  SessionStore& sessions() { return sessions_; }

 private:
  boost::asio::awaitable<Response> route(Request& req);
  boost::asio::awaitable<Response> handle_mcp(Request& req);  // mcp_api.cc
  bool authorized(const Request& req) const;
  bool origin_allowed(const Request& req) const;
  void add_cors(const Request& req, Response& res) const;

  boost::asio::io_context& io_;
  Config config_;
  zmq::context_t zmq_{1};
  std::unique_ptr<launcher::Spawner> spawner_;
  std::vector<std::string> kernelspec_path_;
  std::map<std::string, std::shared_ptr<KernelHub>> kernels_;
  int starting_ = 0;
  SessionStore sessions_;
  common::SystemTime started_ = std::chrono::system_clock::now();
  // MCP over streamable HTTP (/mcp): tools call this gateway's REST API over loopback with the caller's
  // token, from worker threads (the calls block, and this io thread must stay free to serve them).
  int local_port_ = 0;
  int mcp_in_flight_ = 0;
  std::shared_ptr<mcp::HttpBackend> mcp_backend_;
  std::unique_ptr<mcp::McpServer> mcp_;
  std::unique_ptr<boost::asio::thread_pool> mcp_pool_;  // joined in ~Gateway, after the backend is stopped
};

// Route handlers, one file per resource.
boost::asio::awaitable<Response> handle_kernels(Gateway& gw, Request& req, const std::vector<std::string>& parts);
boost::asio::awaitable<Response> handle_kernelspecs(Gateway& gw, Request& req, const std::vector<std::string>& parts);
boost::asio::awaitable<Response> handle_execute(Gateway& gw, Request& req, const std::string& kernel_id);
boost::asio::awaitable<Response> handle_sessions(Gateway& gw, Request& req, const std::vector<std::string>& parts);

}  // namespace cellgate::gateway
