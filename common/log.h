// SPDX-License-Identifier: BSD-3-Clause
// log: one line per event on stderr, `level key=value msg="..."` style, over libfmt.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include <fmt/core.h>

namespace cellgate::common {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

// Process-wide threshold; set once at startup (not thread-safe against concurrent logging).
void set_log_level(LogLevel level);
LogLevel log_level();
// Parses "debug"/"info"/"warn"/"error"; returns false on anything else.
bool parse_log_level(std::string_view text, LogLevel& out);

// Writes one formatted line with a timestamp and level. Thread-safe (one write(2) per line).
void log_line(LogLevel level, std::string_view message);

// message with its control bytes escaped (\n, \r, \t, else \xNN). Messages quote client input (a
// WebSocket session_id, an MCP client name): unescaped, a newline there would forge log lines.
std::string one_line(std::string_view message);

template <typename... Args>
void log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  if (level < log_level()) return;
  log_line(level, fmt::format(format, std::forward<Args>(args)...));
}

template <typename... Args>
void log_debug(fmt::format_string<Args...> f, Args&&... a) { log(LogLevel::kDebug, f, std::forward<Args>(a)...); }
template <typename... Args>
void log_info(fmt::format_string<Args...> f, Args&&... a) { log(LogLevel::kInfo, f, std::forward<Args>(a)...); }
template <typename... Args>
void log_warn(fmt::format_string<Args...> f, Args&&... a) { log(LogLevel::kWarn, f, std::forward<Args>(a)...); }
template <typename... Args>
void log_error(fmt::format_string<Args...> f, Args&&... a) { log(LogLevel::kError, f, std::forward<Args>(a)...); }

}  // namespace cellgate::common
