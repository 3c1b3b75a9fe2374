// SPDX-License-Identifier: BSD-3-Clause
// stdio_transport: MCP over stdin/stdout (newline-delimited JSON-RPC) and the `cellgate mcp` command.
#include "mcp/stdio_transport.h"

#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/log.h"
#include "mcp/http_backend.h"

namespace cellgate::mcp {

namespace {

constexpr const char* kUsage =
    "usage: cellgate mcp --url URL [--token TOKEN] [--log-level LEVEL]\n\n"
    "Serves the Model Context Protocol on stdin/stdout, with tools that drive the cellgate at URL.\n"
    "  --url URL          cellgate base URL, e.g. http://127.0.0.1:8888/ (env CELLGATE_URL)\n"
    "  --token TOKEN      API token (env CELLGATE_TOKEN; prefer the env var: argv is visible in ps)\n"
    "  --log-level LEVEL  debug|info|warn|error on stderr (default warn)\n";

bool write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

int run_stdio(McpServer& server, int in_fd, int out_fd, const std::string& token) {
  McpSession session;
  std::string pending;       // bytes of the current, incomplete line
  bool skipping = false;     // inside an over-long line: drop bytes up to its newline
  char buf[64 * 1024];
  auto answer = [&](std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) return true;
    auto reply = server.handle(line, session, token);
    return !reply || write_all(out_fd, dump_compact(*reply) + "\n");
  };
  while (true) {
    ssize_t n = ::read(in_fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      common::log_error("msg=\"mcp stdin read failed\" error=\"{}\"", std::strerror(errno));
      return 1;
    }
    if (n == 0) break;
    std::string_view chunk(buf, static_cast<size_t>(n));
    while (!chunk.empty()) {
      size_t nl = chunk.find('\n');
      std::string_view part = chunk.substr(0, nl);
      chunk = nl == std::string_view::npos ? std::string_view() : chunk.substr(nl + 1);
      if (!skipping) {
        if (pending.size() + part.size() > kMaxMessageBytes) {
          skipping = true;
          pending.clear();
          common::log_warn("msg=\"mcp message too large, skipped\" limit={}", kMaxMessageBytes);
          auto error = make_error(nullptr, RpcError::kParseError, "message too large; skipped");
          if (!write_all(out_fd, dump_compact(error) + "\n")) return 1;
        } else {
          pending.append(part);
        }
      }
      if (nl == std::string_view::npos) break;
      if (!skipping && !answer(pending)) return 1;
      pending.clear();
      skipping = false;
    }
  }
  // A last message without a trailing newline still counts.
  if (!skipping && !pending.empty() && !answer(pending)) return 1;
  return 0;
}

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
  auto base = parse_base_url(url);
  if (!base) return std::fprintf(stderr, "cellgate mcp: --url: %s\n", base.error().message.c_str()), 2;
  // A client that goes away must end us through a failed write (exit 1), not a signal.
  ::signal(SIGPIPE, SIG_IGN);
  McpServer server(std::make_shared<HttpBackend>(base.value()));
  common::log_info("msg=\"mcp serving on stdio\" url={}", url);
  return run_stdio(server, STDIN_FILENO, STDOUT_FILENO, token);
}

}  // namespace cellgate::mcp
