// SPDX-License-Identifier: BSD-3-Clause
// render: turns cellgate REST answers into MCP tool content an agent can read.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace cellgate::mcp {

// Pretty JSON (2-space indent) for text content; invalid UTF-8 is replaced, never thrown on.
std::string dump_text(const nlohmann::json& j);

// Removes ANSI escape sequences (CSI "ESC [ ... final", OSC "ESC ] ... BEL|ESC \", and two-byte ESC x):
// IPython colours its tracebacks, and the escapes are noise to a model.
std::string strip_ansi(std::string_view text);

// An execute answer ({status, execution_count, outputs[], truncated, workspace?}) as a CallToolResult:
// streams and text/plain as text, PNG/JPEG/GIF/WebP as image content, errors as "ename: evalue" plus the plain
// traceback, workspace changes as a summary line. isError when the status is not "ok".
nlohmann::json render_execute(const nlohmann::json& answer);

// The other tools' answers (see tools.h for the REST shapes). Each returns a CallToolResult.
nlohmann::json render_read(const nlohmann::json& answer);
nlohmann::json render_process(const nlohmann::json& answer);
nlohmann::json render_restore(const nlohmann::json& answer);
// A REST error ({reason, message} with an HTTP status) as an isError result.
nlohmann::json render_http_error(int status, const nlohmann::json& body);

}  // namespace cellgate::mcp
