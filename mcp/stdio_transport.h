// SPDX-License-Identifier: BSD-3-Clause
// stdio_transport: MCP over stdin/stdout (newline-delimited JSON-RPC).
#pragma once

#include <string>

#include "mcp/server.h"

namespace cellgate::mcp {

// Serves one client: reads newline-delimited messages from in_fd and writes each reply as one line to
// out_fd, in order, until EOF on in_fd or a write error. A line longer than kMaxMessageBytes is skipped
// and answered with a parse error. Requests are handled one at a time. Returns 0 at EOF, 1 on I/O error.
int run_stdio(McpServer& server, int in_fd, int out_fd, const std::string& token);

}  // namespace cellgate::mcp
