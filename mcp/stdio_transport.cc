// SPDX-License-Identifier: BSD-3-Clause
// stdio_transport: MCP over stdin/stdout (newline-delimited JSON-RPC).
#include "mcp/stdio_transport.h"

#include <errno.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "common/fd_io.h"
#include "common/log.h"

namespace cellgate::mcp {

int run_stdio(McpServer& server, int in_fd, int out_fd, const std::string& token) {
  McpSession session;
  std::string pending;       // bytes of the current, incomplete line
  bool skipping = false;     // inside an over-long line: drop bytes up to its newline
  char buf[64 * 1024];
  auto answer = [&](std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) return true;
    auto reply = server.handle(line, session, token);
    return !reply || common::write_all(out_fd, dump_compact(*reply) + "\n") == 0;
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
          if (common::write_all(out_fd, dump_compact(error) + "\n") != 0) return 1;
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

}  // namespace cellgate::mcp
