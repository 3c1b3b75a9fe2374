// SPDX-License-Identifier: BSD-3-Clause
// cellgate: the gateway executable (subcommands: serve, run, user, mcp, fsck, gc).
#include <signal.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <optional>
#include <string>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/signal_set.hpp>

#include "common/log.h"
#include "common/progress.h"
#include "gateway/config.h"
#include "gateway/gateway.h"
#include "gateway/heap_policy.h"
#include "gateway/http/listener.h"
#include "gateway/http/tls.h"
#include "gateway/run_command.h"
#include "mcp/stdio_transport.h"
#include "state/user_cli.h"
#include "workspace/fsck.h"
#include "workspace/gc.h"
#include "workspace/layout.h"
#include "workspace/object_store.h"
#include "workspace/restore_command.h"

namespace {

constexpr const char* kUsage =
    "usage: cellgate <command> [options]\n\n"
    "commands:\n"
    "  serve    run the gateway (cellgate serve --help)\n"
    "  run      execute a notebook and write its outputs: cellgate run NOTEBOOK.ipynb (--help)\n"
    "  user     manage users and their tokens (cellgate user --help)\n"
    "  mcp      an MCP server over stdio for a running gateway: cellgate mcp --url URL --token T\n"
    "  fsck     verify every snapshot object and manifest: cellgate fsck [--data-dir DIR]\n"
    "  gc       remove snapshot objects no snapshot references: cellgate gc [--data-dir DIR]\n"
    "  restore  put a workspace back to a snapshot: cellgate restore [--data-dir DIR] [--owner U] WS SNAPSHOT\n";

// `cellgate fsck|gc [--data-dir DIR]`: DIR defaults to $CELLGATE_DATA_DIR, then ./data.
std::string data_dir_arg(int argc, char** argv) {
  std::string dir = std::getenv("CELLGATE_DATA_DIR") ? std::getenv("CELLGATE_DATA_DIR") : "./data";
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--data-dir" && i + 1 < argc) dir = argv[++i];
    else if (a.rfind("--data-dir=", 0) == 0) dir = a.substr(11);
    else throw cellgate::common::ConfigError("unexpected argument '" + a + "' (usage: --data-dir DIR)");
  }
  return dir;
}

int gc_main(const std::string& data_dir) {
  auto store = cellgate::workspace::ObjectStore::open(cellgate::workspace::store_dir(data_dir));
  if (!store) {
    std::fprintf(stderr, "cellgate: cannot open the store in %s: %s\n", data_dir.c_str(), store.error().message.c_str());
    return 2;
  }
  std::optional<cellgate::common::TerminalProgress> meter(std::in_place, "gc");  // stderr, a terminal only
  auto r = cellgate::workspace::collect_garbage(store.value(), data_dir, meter->fn());
  meter.reset();
  if (!r) {
    std::fprintf(stderr, "cellgate: gc failed: %s\n", r.error().message.c_str());
    return 1;
  }
  std::printf("gc: %llu objects removed\n", static_cast<unsigned long long>(r->objects_removed));
  return 0;
}

// notebook-http cannot serve without its kernels (a failing seed cell, for example): say why, exit 1.
// Pointers: gw and exit_code outlive io.run(), which outlives this coroutine.
boost::asio::awaitable<void> start_services(cellgate::gateway::Gateway* gw, int* exit_code,
                                            std::function<void()> shut_down) {
  auto st = co_await gw->start_services();
  if (st) co_return;
  std::fprintf(stderr, "cellgate: notebook-http: %s\n", st.error().message.c_str());
  *exit_code = 1;
  shut_down();
}

// Each kernel holds about 13 descriptors (5 ZMQ sockets, their mailboxes, pidfds) and each WebSocket
// one, so a soft limit of 1024 would stop the gateway near 70 kernels. Jailed kernels get the policy's
// own limit, so raising ours to the hard limit does not reach them.
void raise_fd_limit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max) return;
  const rlim_t before = rl.rlim_cur;
  rl.rlim_cur = rl.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &rl) != 0) {
    cellgate::common::log_warn("msg=\"cannot raise the open files limit\" soft={} errno={}", before, errno);
    return;
  }
  cellgate::common::log_info("msg=\"open files limit raised\" from={} to={}", before, rl.rlim_cur);
}

int serve(int argc, char** argv) {
  using namespace cellgate;
  namespace asio = boost::asio;
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
  asio::io_context io(1);
  gateway::Gateway gw(io, config);
  auto acceptor = http::make_acceptor(io, config.ip, config.port);
  const int port = acceptor.local_endpoint().port();
  // /mcp calls this gateway's REST API over loopback HTTP. With TLS on, those calls go to a second,
  // plain listener bound to 127.0.0.1 only (still token-authenticated), so the MCP client needs no TLS.
  std::optional<asio::ip::tcp::acceptor> internal;
  if (tls) {
    internal.emplace(http::make_acceptor(io, "127.0.0.1", 0));
    gw.set_local_endpoint("127.0.0.1", internal->local_endpoint().port());
  } else {
    gw.set_local_endpoint(config.ip, port);
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
    signals.cancel(ignored);
    asio::co_spawn(io, gw.stop(), [&io](std::exception_ptr) { io.stop(); });
  };
  asio::co_spawn(io, start_services(&gw, &exit_code, shut_down), asio::detached);
  gateway::schedule_heap_trim(io);
  asio::co_spawn(io, http::accept_loop(acceptor, gw, gw.limits(), tls.get()), asio::detached);
  if (internal) asio::co_spawn(io, http::accept_loop(*internal, gw, gw.limits()), asio::detached);
  signals.async_wait([&](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    common::log_info("msg=\"stopping\" signal={}", sig);
    shut_down();
  });
  io.run();
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string command = argv[1];
  try {
    if (command == "serve") return serve(argc - 2, argv + 2);
    if (command == "run") return cellgate::gateway::run_main(argc - 2, argv + 2);
    if (command == "user") return cellgate::state::user_main(argc - 2, argv + 2);
    if (command == "mcp") return cellgate::mcp::mcp_main(argc - 2, argv + 2);
    if (command == "fsck") return cellgate::workspace::fsck_main(data_dir_arg(argc - 2, argv + 2), std::cout);
    if (command == "gc") return gc_main(data_dir_arg(argc - 2, argv + 2));
    if (command == "restore") return cellgate::workspace::restore_main(argc - 2, argv + 2);
  } catch (const cellgate::common::ConfigError& e) {
    std::fprintf(stderr, "cellgate: %s\n", e.what());
    return 2;
  }
  std::fprintf(stderr, "cellgate: unknown command '%s'\n%s", command.c_str(), kUsage);
  return 2;
}
