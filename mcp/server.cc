// SPDX-License-Identifier: BSD-3-Clause
// server: the MCP protocol (lifecycle, ping, tools/list, tools/call) over JSON-RPC, transport-agnostic.
#include "mcp/server.h"

#include "common/log.h"
#include "mcp/tools.h"

namespace cellgate::mcp {

using nlohmann::json;

namespace {

constexpr const char* kInstructions =
    "cellgate runs code in sandboxed, stateful Jupyter kernels. Typical use: list_kernels to find one, or "
    "start_kernel; then execute code (state persists between calls), and read/write/edit files or run programs "
    "with process in the kernel's workspace. Take a snapshot of the workspace before risky changes; restore "
    "brings its files back.";

bool supported(const std::string& version) {
  for (const char* v : kProtocolVersions)
    if (version == v) return true;
  return false;
}

}  // namespace

McpServer::McpServer(std::shared_ptr<client::RestApi> backend) : backend_(std::move(backend)) {}

std::optional<json> McpServer::handle(std::string_view text, McpSession& session, const std::string& token) {
  if (text.size() > kMaxMessageBytes)
    return make_error(nullptr, RpcError::kInvalidRequest,
                      "message too large (at most " + std::to_string(kMaxMessageBytes) + " bytes)");
  return handle(parse_payload(text), session, token);
}

std::optional<json> McpServer::handle(const RpcPayload& payload, McpSession& session, const std::string& token) {
  if (payload.parse_error) return *payload.parse_error;
  json replies = json::array();
  for (const auto& m : payload.messages) {
    switch (m.kind) {
      case MessageKind::kInvalid:
        replies.push_back(m.error);
        break;
      case MessageKind::kRequest:
        replies.push_back(handle_request(m, session, token, payload.batch));
        break;
      case MessageKind::kNotification:
        // notifications/initialized completes the handshake; cancellations and others need no action here
        // (calls run to completion; their results are then simply ignored by the client).
        if (m.method == "notifications/initialized") session.client_ready = true;
        common::log_debug("msg=\"mcp notification\" method={}", m.method);
        break;
      case MessageKind::kResponse:
        break;  // we send no requests, so there is nothing to match
    }
  }
  if (replies.empty()) return std::nullopt;
  if (!payload.batch) return std::move(replies[0]);
  return replies;
}

json McpServer::handle_request(const RpcMessage& m, McpSession& session, const std::string& token, bool in_batch) {
  common::log_debug("msg=\"mcp request\" method={}", m.method);
  try {
    if (m.method == "initialize") return initialize(m, session, in_batch);
    if (m.method == "ping") return make_result(m.id, json::object());
    if (session.protocol_version.empty())
      return make_error(m.id, RpcError::kInvalidRequest, "server not initialized: send initialize first");
    if (m.method == "tools/list") {
      if (m.params.contains("cursor") && !m.params["cursor"].is_null())
        return make_error(m.id, RpcError::kInvalidParams, "invalid cursor (tools/list has a single page)");
      return make_result(m.id, {{"tools", tool_catalog()}});
    }
    if (m.method == "tools/call") return tools_call(m, token);
    return make_error(m.id, RpcError::kMethodNotFound, "method not found: " + m.method);
  } catch (const std::exception& e) {
    // A net for library throws: the request fails, the server goes on.
    common::log_error("msg=\"mcp request failed\" method={} error=\"{}\"", m.method, e.what());
    return make_error(m.id, RpcError::kInternalError, "internal error");
  }
}

json McpServer::initialize(const RpcMessage& m, McpSession& session, bool in_batch) {
  // MCP 2025-03-26 lifecycle: initialize must not be part of a batch, and happens once per session.
  if (in_batch) return make_error(m.id, RpcError::kInvalidRequest, "initialize must not be sent in a batch");
  if (!session.protocol_version.empty()) return make_error(m.id, RpcError::kInvalidRequest, "already initialized");
  auto v = m.params.find("protocolVersion");
  if (v == m.params.end() || !v->is_string())
    return make_error(m.id, RpcError::kInvalidParams, "initialize: protocolVersion must be a string");
  // Version negotiation: echo a version we speak, else offer our newest and let the client decide.
  const std::string requested = v->get<std::string>();
  session.protocol_version = supported(requested) ? requested : kProtocolVersions[0];
  std::string client = "?";
  if (auto info = m.params.find("clientInfo"); info != m.params.end() && info->is_object())
    if (auto name = info->find("name"); name != info->end() && name->is_string()) client = name->get<std::string>();
  common::log_info("msg=\"mcp session initialized\" client=\"{}\" protocol={}", client.substr(0, 100),
                   session.protocol_version);
  return make_result(m.id, {{"protocolVersion", session.protocol_version},
                            {"capabilities", {{"tools", {{"listChanged", false}}}}},
                            {"serverInfo", {{"name", "cellgate"}, {"version", "0.1.0"}}},
                            {"instructions", kInstructions}});
}

json McpServer::tools_call(const RpcMessage& m, const std::string& token) {
  auto name = m.params.find("name");
  if (name == m.params.end() || !name->is_string())
    return make_error(m.id, RpcError::kInvalidParams, "tools/call: name must be a string");
  json arguments = json::object();
  if (auto a = m.params.find("arguments"); a != m.params.end() && !a->is_null()) arguments = *a;
  auto result = call_tool(*backend_, token, name->get<std::string>(), arguments);
  if (!result) return make_error(m.id, RpcError::kInvalidParams, result.error().message);
  return make_result(m.id, std::move(result.value()));
}

}  // namespace cellgate::mcp
