// SPDX-License-Identifier: BSD-3-Clause
// http_transport: MCP "Streamable HTTP" (spec 2025-03-26) as a pure function the gateway's router calls.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mcp/server.h"

namespace cellgate::mcp {

// The request headers the transport reads ("" when absent).
struct McpHttpHeaders {
  std::string session_id;    // Mcp-Session-Id
  std::string content_type;  // Content-Type
  std::string accept;        // Accept
};

struct McpHttpResult {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;  // Content-Type, Mcp-Session-Id, Allow
  std::string body;
};

// Serves one request to the MCP endpoint for an already authenticated caller whose token is `token`
// (tools call the REST API with it, so the caller's ownership and quotas apply). method is the HTTP
// method name. POST carries JSON-RPC: an initialize opens a session (Mcp-Session-Id in the answer), later
// POSTs must name it (400 without, 404 when unknown, expired or another token's); requests are answered
// with application/json, notifications and responses alone with 202. DELETE ends the session; GET (no
// server-initiated stream is offered) and other methods get 405. Blocks while tools run: call it off the
// io thread. Thread-safe; never throws.
McpHttpResult handle_mcp_http(McpServer& server, std::string_view method, const McpHttpHeaders& headers,
                              std::string_view body, const std::string& token);

}  // namespace cellgate::mcp
