// SPDX-License-Identifier: BSD-3-Clause
// server: the MCP protocol (lifecycle, ping, tools/list, tools/call) over JSON-RPC, transport-agnostic.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "client/rest.h"
#include "mcp/json_rpc.h"
#include "mcp/session_table.h"

namespace cellgate::mcp {

// Largest message (stdio line or HTTP body) accepted.
constexpr size_t kMaxMessageBytes = 16u << 20;
// Protocol versions spoken, newest first; the first is offered when a client asks for another.
constexpr const char* kProtocolVersions[] = {"2025-03-26", "2024-11-05"};

// One client's lifecycle state. The protocol version is written once, by initialize, before the session is
// shared (HTTP hands out its id only afterwards); initialized is the only field that changes later.
struct McpSession {
  std::string protocol_version;  // "" until initialize has been answered
  std::atomic<bool> client_ready{false};  // notifications/initialized received
};

// Thread-safe: handle() may run concurrently on several threads, for the same or different sessions.
// Tools block on the backend, so call it off any io_context thread that the backend's server needs.
class McpServer {
 public:
  explicit McpServer(std::shared_ptr<client::RestApi> backend);

  // Handles one payload (a message or a batch) for session with the caller's token. Returns the reply to
  // send (a response, an array for a batch), or nullopt when there is nothing to send (only notifications
  // or responses came in). Never throws.
  std::optional<nlohmann::json> handle(std::string_view text, McpSession& session, const std::string& token);
  std::optional<nlohmann::json> handle(const RpcPayload& payload, McpSession& session, const std::string& token);

  // The sessions of the streamable HTTP transport.
  SessionTable& sessions() { return sessions_; }

 private:
  nlohmann::json handle_request(const RpcMessage& m, McpSession& session, const std::string& token, bool in_batch);
  nlohmann::json initialize(const RpcMessage& m, McpSession& session, bool in_batch);
  nlohmann::json tools_call(const RpcMessage& m, const std::string& token);

  std::shared_ptr<client::RestApi> backend_;
  SessionTable sessions_;
};

}  // namespace cellgate::mcp
