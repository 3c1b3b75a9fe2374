// SPDX-License-Identifier: BSD-3-Clause
// json_rpc: JSON-RPC 2.0 framing (requests, notifications, responses, batches, error objects).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace cellgate::mcp {

// The error codes of JSON-RPC 2.0 §5.1.
enum class RpcError : int {
  kParseError = -32700,
  kInvalidRequest = -32600,
  kMethodNotFound = -32601,
  kInvalidParams = -32602,
  kInternalError = -32603,
};

enum class MessageKind { kRequest, kNotification, kResponse, kInvalid };

// One decoded message. For kInvalid, error holds the error response to send (its id, when it could be read).
struct RpcMessage {
  MessageKind kind = MessageKind::kInvalid;
  nlohmann::json id;                                   // string or number; null for notifications
  std::string method;
  nlohmann::json params = nlohmann::json::object();    // absent params read as {}
  nlohmann::json error;                                // kInvalid only: a full error response
};

// A whole incoming payload: one message or a batch. parse_error is set (a full error response) when the
// text is not JSON, is an empty batch, or breaks a bound; otherwise messages holds one entry per element.
struct RpcPayload {
  bool batch = false;
  std::vector<RpcMessage> messages;
  std::optional<nlohmann::json> parse_error;
};

constexpr size_t kMaxBatchItems = 64;

// Parses untrusted text (never throws). Each element is classified on its own, as §6 asks.
RpcPayload parse_payload(std::string_view text);
// Classifies one JSON value.
RpcMessage classify(const nlohmann::json& value);

// {"jsonrpc":"2.0","id":id,"result":result}
nlohmann::json make_result(const nlohmann::json& id, nlohmann::json result);
// {"jsonrpc":"2.0","id":id,"error":{"code","message"[,"data"]}}
nlohmann::json make_error(const nlohmann::json& id, RpcError code, std::string message,
                          nlohmann::json data = nullptr);

// Serialises for the wire: compact, one line (no raw newlines, as the stdio transport needs), invalid UTF-8
// replaced rather than thrown on.
std::string dump_compact(const nlohmann::json& value);

}  // namespace cellgate::mcp
