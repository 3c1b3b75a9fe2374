// SPDX-License-Identifier: BSD-3-Clause
// json_rpc: JSON-RPC 2.0 framing (requests, notifications, responses, batches, error objects).
#include "mcp/json_rpc.h"

#include "protocol/json_text.h"

namespace cellgate::mcp {

using nlohmann::json;

namespace {

RpcMessage invalid(const json& id, RpcError code, std::string message) {
  RpcMessage m;
  m.kind = MessageKind::kInvalid;
  m.id = id;
  m.error = make_error(id, code, std::move(message));
  return m;
}

}  // namespace

RpcMessage classify(const json& value) {
  if (!value.is_object()) return invalid(nullptr, RpcError::kInvalidRequest, "a message must be a JSON object");
  // The id is read first so that an error about the rest of the message can still be correlated (§5).
  json id = nullptr;
  auto id_it = value.find("id");
  const bool has_id = id_it != value.end();
  if (has_id) {
    // MCP narrows JSON-RPC: an id is a string or an integer, never null.
    if (!id_it->is_string() && !id_it->is_number_integer())
      return invalid(nullptr, RpcError::kInvalidRequest, "id must be a string or an integer");
    id = *id_it;
  }
  auto version = value.find("jsonrpc");
  if (version == value.end() || *version != "2.0")
    return invalid(id, RpcError::kInvalidRequest, "jsonrpc must be \"2.0\"");
  auto method = value.find("method");
  if (method == value.end()) {
    // A response to a request of ours (we send none, so these are only acknowledged).
    if (has_id && (value.contains("result") || value.contains("error"))) {
      RpcMessage m;
      m.kind = MessageKind::kResponse;
      m.id = id;
      return m;
    }
    return invalid(id, RpcError::kInvalidRequest, "method is missing");
  }
  if (!method->is_string()) return invalid(id, RpcError::kInvalidRequest, "method must be a string");
  RpcMessage m;
  m.kind = has_id ? MessageKind::kRequest : MessageKind::kNotification;
  m.id = id;
  m.method = method->get<std::string>();
  if (auto p = value.find("params"); p != value.end() && !p->is_null()) {
    if (!p->is_object()) return invalid(id, RpcError::kInvalidParams, "params must be an object");
    m.params = *p;
  }
  return m;
}

RpcPayload parse_payload(std::string_view text) {
  RpcPayload payload;
  json value = protocol::parse_untrusted_json(text);
  if (value.is_discarded()) {
    payload.parse_error = make_error(nullptr, RpcError::kParseError, "parse error: not valid JSON (or nested too deeply)");
    return payload;
  }
  if (!value.is_array()) {
    payload.messages.push_back(classify(value));
    return payload;
  }
  payload.batch = true;
  if (value.empty()) {
    payload.parse_error = make_error(nullptr, RpcError::kInvalidRequest, "empty batch");
  } else if (value.size() > kMaxBatchItems) {
    payload.parse_error = make_error(nullptr, RpcError::kInvalidRequest,
                                     "batch too large (at most " + std::to_string(kMaxBatchItems) + " messages)");
  } else {
    for (const auto& item : value) payload.messages.push_back(classify(item));
  }
  return payload;
}

json make_result(const json& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

json make_error(const json& id, RpcError code, std::string message, json data) {
  json error = {{"code", static_cast<int>(code)}, {"message", std::move(message)}};
  if (!data.is_null()) error["data"] = std::move(data);
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(error)}};
}

std::string dump_compact(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace cellgate::mcp
