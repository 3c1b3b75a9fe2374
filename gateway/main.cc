// SPDX-License-Identifier: BSD-3-Clause
// cellgate: the gateway executable (subcommands: serve).
#include <signal.h>

#include <cstdio>
#include <iostream>
#include <string>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/signal_set.hpp>

#include "common/log.h"
#include "gateway/config.h"
#include "gateway/gateway.h"
#include "gateway/http_server.h"
#include "mcp/stdio_transport.h"
#include "state/user_cli.h"

namespace {

constexpr const char* kUsage =
    "usage: cellgate <command> [options]\n\n"
    "commands:\n"
    "  serve    run the gateway (cellgate serve --help)\n";

int serve(int argc, char** argv) {
  using namespace cellgate;
  namespace asio = boost::asio;
  gateway::Config config = gateway::load_config(argc, argv);
  common::LogLevel level;
  common::parse_log_level(config.log_level, level);
  common::set_log_level(level);
  ::signal(SIGPIPE, SIG_IGN);

  asio::io_context io(1);
  gateway::Gateway gw(io, config);
  auto acceptor = gateway::make_acceptor(io, config.ip, config.port);
  const int port = acceptor.local_endpoint().port();
  std::string host = config.ip.find(':') != std::string::npos ? "[" + config.ip + "]" : config.ip;
  std::printf("cellgate serving at http://%s:%d%s?token=%s\n", host.c_str(), port, config.base_url.c_str(),
              config.token.c_str());
  std::fflush(stdout);
  common::log_info("msg=\"listening\" address={}:{} spawner={}", host, port, config.spawner);

  asio::co_spawn(io, gateway::accept_loop(acceptor, gw), asio::detached);
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    common::log_info("msg=\"stopping\" signal={}", sig);
    boost::system::error_code ignored;
    acceptor.close(ignored);
    asio::co_spawn(io, gw.shutdown_all(), [&io](std::exception_ptr) { io.stop(); });
  });
  io.run();
  return 0;
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
    if (command == "user") return cellgate::state::user_main(argc - 2, argv + 2);
    if (command == "mcp") return cellgate::mcp::mcp_main(argc - 2, argv + 2);
  } catch (const cellgate::gateway::ConfigError& e) {
    std::fprintf(stderr, "cellgate: %s\n", e.what());
    return 2;
  }
  std::fprintf(stderr, "cellgate: unknown command '%s'\n%s", command.c_str(), kUsage);
  return 2;
}
