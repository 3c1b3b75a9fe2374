// SPDX-License-Identifier: BSD-3-Clause
// http_transport: MCP "Streamable HTTP" (spec 2025-03-26) as a pure function the gateway's router calls.
#include "mcp/http_transport.h"

#include <algorithm>
#include <cctype>

#include "common/log.h"

namespace cellgate::mcp {

using nlohmann::json;

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

McpHttpResult json_answer(int status, const json& body) {
  return {status, {{"Content-Type", "application/json"}}, dump_compact(body)};
}

// An HTTP-level refusal carries a JSON-RPC error without an id, as the transport section suggests.
McpHttpResult refuse(int status, RpcError code, std::string message) {
  return json_answer(status, make_error(nullptr, code, std::move(message)));
}

bool accepts_json(std::string_view accept) {
  if (accept.empty()) return true;
  std::string a = lower(accept);
  return a.find("application/json") != std::string::npos || a.find("*/*") != std::string::npos ||
         a.find("application/*") != std::string::npos;
}

bool is_initialize(const RpcPayload& payload) {
  return std::any_of(payload.messages.begin(), payload.messages.end(), [](const RpcMessage& m) {
    return m.kind == MessageKind::kRequest && m.method == "initialize";
  });
}

McpHttpResult post(McpServer& server, const McpHttpHeaders& headers, std::string_view body, const std::string& token) {
  if (lower(headers.content_type).rfind("application/json", 0) != 0)
    return refuse(415, RpcError::kInvalidRequest, "Content-Type must be application/json");
  // The spec has clients accept both JSON and SSE; we only answer JSON, so that is what must be acceptable.
  if (!accepts_json(headers.accept))
    return refuse(406, RpcError::kInvalidRequest, "Accept must allow application/json");
  if (body.size() > kMaxMessageBytes) return refuse(413, RpcError::kInvalidRequest, "message too large");
  RpcPayload payload = parse_payload(body);
  if (payload.parse_error) return json_answer(400, *payload.parse_error);

  std::shared_ptr<McpSession> session;
  std::string new_id;
  if (is_initialize(payload) && !payload.batch) {
    // A fresh session every time: a client re-initializing starts over (any Mcp-Session-Id it sent is ignored).
    session = std::make_shared<McpSession>();
    auto reply = server.handle(payload, *session, token);
    if (session->protocol_version.empty()) return json_answer(400, reply.value_or(json()));  // initialize refused
    new_id = server.sessions().add(session, token);
    if (new_id.empty())
      return refuse(429, RpcError::kInvalidRequest,
                    "Resource Limit: the gateway holds its most MCP sessions (" +
                        std::to_string(SessionTable::kMaxSessions) + "); retry after some end");
    McpHttpResult res = json_answer(200, reply.value_or(json()));
    res.headers.emplace_back("Mcp-Session-Id", new_id);
    return res;
  }
  if (headers.session_id.empty())
    return refuse(400, RpcError::kInvalidRequest, "Mcp-Session-Id header required (send initialize first)");
  session = server.sessions().find(headers.session_id, token);
  if (!session) return refuse(404, RpcError::kInvalidRequest, "unknown or expired session; initialize again");

  const bool has_requests = std::any_of(payload.messages.begin(), payload.messages.end(),
                                        [](const RpcMessage& m) { return m.kind == MessageKind::kRequest; });
  auto reply = server.handle(payload, *session, token);
  if (!has_requests) {
    // Only notifications/responses: 202 when all were acceptable, else 400 with the (first) error.
    if (!reply) return {202, {}, ""};
    return json_answer(400, reply->is_array() ? (*reply)[0] : *reply);
  }
  return json_answer(200, reply.value_or(json::array()));
}

}  // namespace

McpHttpResult handle_mcp_http(McpServer& server, std::string_view method, const McpHttpHeaders& headers,
                              std::string_view body, const std::string& token) {
  try {
    if (method == "POST") return post(server, headers, body, token);
    if (method == "DELETE") {
      if (headers.session_id.empty()) return refuse(400, RpcError::kInvalidRequest, "Mcp-Session-Id header required");
      if (!server.sessions().remove(headers.session_id, token))
        return refuse(404, RpcError::kInvalidRequest, "unknown or expired session");
      return {200, {}, ""};
    }
    McpHttpResult res = refuse(405, RpcError::kInvalidRequest, "method not allowed: use POST (or DELETE to end a session)");
    res.headers.emplace_back("Allow", "POST, DELETE");
    return res;
  } catch (const std::exception& e) {
    common::log_error("msg=\"mcp http request failed\" error=\"{}\"", e.what());
    return refuse(500, RpcError::kInternalError, "internal error");
  }
}

}  // namespace cellgate::mcp
