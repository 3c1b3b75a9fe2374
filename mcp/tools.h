// SPDX-License-Identifier: BSD-3-Clause
// tools: the MCP tools cellgate offers (catalog for tools/list, dispatch for tools/call).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "client/rest.h"

namespace cellgate::mcp {

// The tools/list "tools" array: name, description (written for an LLM agent), inputSchema, annotations.
const nlohmann::json& tool_catalog();

// Runs one tool with the caller's token and returns a CallToolResult ({content: [...], isError}).
// Failures of the call itself (HTTP errors, cellgate unreachable, Python exceptions, timeouts) are results
// with isError true, so the agent can read and react to them. An Error (kBadRequest) is returned only for
// an unknown tool or arguments that do not match the tool's schema: the caller maps it to -32602.
// Blocks on the backend; thread-safe.
common::Result<nlohmann::json> call_tool(client::RestApi& backend, const std::string& token, const std::string& name,
                                         const nlohmann::json& arguments);

// Content items (MCP CallToolResult parts).
nlohmann::json text_content(std::string text);
nlohmann::json image_content(std::string base64, std::string mime_type);
nlohmann::json tool_result(nlohmann::json content, bool is_error);

}  // namespace cellgate::mcp
