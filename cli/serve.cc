// SPDX-License-Identifier: BSD-3-Clause
// serve: `cellgate serve`.
#include "cli/serve.h"

#include <signal.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/signal_set.hpp>

#include "common/log.h"
#include "gateway/api/router.h"
#include "gateway/config.h"
#include "gateway/gateway.h"
#include "gateway/heap_policy.h"
#include "gateway/http/listener.h"
#include "gateway/http/tls.h"
#include "nbhttp/frontend.h"

namespace cellgate::cli {

namespace asio = boost::asio;

namespace {

// Each kernel holds about 13 descriptors (5 ZMQ sockets, their mailboxes, pidfds) and each WebSocket
// one, so a soft limit of 1024 would stop the gateway near 70 kernels. Jailed kernels get the policy's
// own limit, so raising ours to the hard limit does not reach them.
void raise_fd_limit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max) return;
  const rlim_t before = rl.rlim_cur;
  rl.rlim_cur = rl.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &rl) != 0) {
    common::log_warn("msg=\"cannot raise the open files limit\" soft={} errno={}", before, errno);
    return;
  }
  common::log_info("msg=\"open files limit raised\" from={} to={}", before, rl.rlim_cur);
}

// The front end's services start after the gateway's (re-adoption first). notebook-http cannot serve
// without its kernels (a failing seed cell, for example): it says why and the process exits 1.
// Pointers: they outlive io.run(), which outlives this coroutine.
asio::awaitable<void> start_services(gateway::Gateway* gw, nbhttp::Frontend* nb, int* exit_code,
                                     std::function<void()> shut_down) {
  co_await gw->start();
  if (!nb) co_return;
  auto st = co_await nb->start();
  if (st) co_return;
  std::fprintf(stderr, "cellgate: notebook-http: %s\n", st.error().message.c_str());
  *exit_code = 1;
  shut_down();
}

asio::awaitable<void> stop_services(gateway::Gateway* gw, nbhttp::Frontend* nb) {
  if (nb) co_await nb->stop();
  co_await gw->stop();
}

}  // namespace

int serve_main(int argc, char** argv) {
  gateway::Config config = gateway::load_config(argc, argv);
  common::LogLevel level;
  common::parse_log_level(config.log_level, level);
  common::set_log_level(level);
  ::signal(SIGPIPE, SIG_IGN);
  raise_fd_limit();
  gateway::keep_large_blocks_in_heap();

  // TLS first: a bad certificate or key fails before anything else starts.
  std::unique_ptr<asio::ssl::context> tls;
  if (!config.certfile.empty()) tls = http::make_tls_context(config.certfile, config.keyfile);
  std::unique_ptr<asio::ssl::context> cluster_tls;
  if (config.clustered())
    cluster_tls = http::make_cluster_server_context(config.cluster_cert, config.cluster_key, config.cluster_ca);
  asio::io_context io(1);
  gateway::Gateway gw(io, config);
  // The front end: notebook-http's endpoints, or the Jupyter API (REST, kernel WebSockets, /mcp).
  std::unique_ptr<nbhttp::Frontend> notebook_http;
  std::unique_ptr<api::Router> api;
  http::Handler* handler = nullptr;
  if (!config.notebook_http.empty()) {
    notebook_http = std::make_unique<nbhttp::Frontend>(gw);
    handler = notebook_http.get();
  } else {
    api = std::make_unique<api::Router>(gw);
    handler = api.get();
  }
  const http::Limits limits{config.max_header_bytes, config.max_body_bytes};
  auto acceptor = http::make_acceptor(io, config.ip, config.port);
  const int port = acceptor.local_endpoint().port();
  // /mcp calls this gateway's REST API over loopback HTTP. With TLS on, those calls go to a second,
  // plain listener bound to 127.0.0.1 only (still token-authenticated), so the MCP client needs no TLS.
  std::optional<asio::ip::tcp::acceptor> internal;
  if (api && tls) {
    internal.emplace(http::make_acceptor(io, "127.0.0.1", 0));
    api->set_local_endpoint("127.0.0.1", internal->local_endpoint().port());
  } else if (api) {
    api->set_local_endpoint(config.ip, port);
  }
  // A cluster node's internal listener: mutual TLS with the cluster CA, the same routes (docs/cluster.md).
  std::optional<asio::ip::tcp::acceptor> cluster;
  if (config.clustered()) {
    const auto colon = config.cluster_listen.rfind(':');
    std::string cip = config.cluster_listen.substr(0, colon);
    if (cip.size() > 1 && cip.front() == '[') cip = cip.substr(1, cip.size() - 2);
    cluster.emplace(http::make_acceptor(io, cip, std::stoi(config.cluster_listen.substr(colon + 1))));
    common::log_info("msg=\"cluster listener\" node={} address={} advertised={}", config.node_id,
                     config.cluster_listen, config.cluster_advertise);
  }
  std::string host = config.ip.find(':') != std::string::npos ? "[" + config.ip + "]" : config.ip;
  const char* scheme = tls ? "https" : "http";
  std::printf("cellgate serving at %s://%s:%d%s?token=%s\n", scheme, host.c_str(), port, config.base_url.c_str(),
              config.token.c_str());
  std::fflush(stdout);
  common::log_info("msg=\"listening\" address={}://{}:{} spawner={}", scheme, host, port, config.spawner);

  int exit_code = 0;
  asio::signal_set signals(io, SIGINT, SIGTERM);
  auto shut_down = [&] {
    boost::system::error_code ignored;
    acceptor.close(ignored);
    if (internal) internal->close(ignored);
    if (cluster) cluster->close(ignored);
    signals.cancel(ignored);
    asio::co_spawn(io, stop_services(&gw, notebook_http.get()), [&io](std::exception_ptr) { io.stop(); });
  };
  asio::co_spawn(io, start_services(&gw, notebook_http.get(), &exit_code, shut_down), asio::detached);
  gateway::schedule_heap_trim(io);
  asio::co_spawn(io, http::accept_loop(acceptor, *handler, limits, tls.get()), asio::detached);
  if (internal) asio::co_spawn(io, http::accept_loop(*internal, *handler, limits), asio::detached);
  if (cluster) asio::co_spawn(io, http::accept_loop(*cluster, *handler, limits, cluster_tls.get(), true), asio::detached);
  signals.async_wait([&](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    common::log_info("msg=\"stopping\" signal={}", sig);
    shut_down();
  });
  io.run();
  return exit_code;
}

}  // namespace cellgate::cli
