// SPDX-License-Identifier: BSD-3-Clause
// mcp: `cellgate mcp`: the MCP server on stdio, its tools calling a running gateway's REST API.
#include "cli/mcp.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "client/http_client.h"
#include "common/log.h"
#include "mcp/server.h"
#include "mcp/stdio_transport.h"

namespace cellgate::cli {

namespace {

constexpr const char* kUsage =
    "usage: cellgate mcp --url URL [--token TOKEN] [--log-level LEVEL]\n\n"
    "Serves the Model Context Protocol on stdin/stdout, with tools that drive the cellgate at URL.\n"
    "  --url URL          cellgate base URL, e.g. http://127.0.0.1:8888/ (env CELLGATE_URL)\n"
    "  --token TOKEN      API token (env CELLGATE_TOKEN; prefer the env var: argv is visible in ps)\n"
    "  --log-level LEVEL  debug|info|warn|error on stderr (default warn)\n";

}  // namespace

int mcp_main(int argc, char** argv) {
  const char* env_url = std::getenv("CELLGATE_URL");
  const char* env_token = std::getenv("CELLGATE_TOKEN");
  std::string url = env_url ? env_url : "", token = env_token ? env_token : "", level_name = "warn";
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= argc) return false;
      out = argv[++i];
      return true;
    };
    bool ok = true;
    if (arg == "--help" || arg == "-h") return std::fputs(kUsage, stdout), 0;
    if (arg == "--url") ok = value(url);
    else if (arg == "--token") ok = value(token);
    else if (arg == "--log-level") ok = value(level_name);
    else ok = false;
    if (!ok) return std::fprintf(stderr, "cellgate mcp: bad argument '%s'\n%s", arg.c_str(), kUsage), 2;
  }
  common::LogLevel level;
  if (!common::parse_log_level(level_name, level))
    return std::fprintf(stderr, "cellgate mcp: --log-level: expected debug|info|warn|error\n"), 2;
  common::set_log_level(level);
  if (url.empty()) return std::fprintf(stderr, "cellgate mcp: --url is required\n%s", kUsage), 2;
  auto base = client::parse_base_url(url);
  if (!base) return std::fprintf(stderr, "cellgate mcp: --url: %s\n", base.error().message.c_str()), 2;
  // A client that goes away must end us through a failed write (exit 1), not a signal.
  ::signal(SIGPIPE, SIG_IGN);
  mcp::McpServer server(std::make_shared<client::HttpClient>(base.value()));
  common::log_info("msg=\"mcp serving on stdio\" url={}", url);
  return mcp::run_stdio(server, STDIN_FILENO, STDOUT_FILENO, token);
}

}  // namespace cellgate::cli
