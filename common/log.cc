// SPDX-License-Identifier: BSD-3-Clause
// log: one line per event on stderr.
#include "common/log.h"

#include <unistd.h>

#include <atomic>
#include <string>

#include "common/time_format.h"

namespace cellgate::common {
namespace {
std::atomic<LogLevel> g_level{LogLevel::kInfo};
constexpr const char* kNames[] = {"debug", "info", "warn", "error"};
}  // namespace

void set_log_level(LogLevel level) { g_level.store(level, std::memory_order_relaxed); }
LogLevel log_level() { return g_level.load(std::memory_order_relaxed); }

bool parse_log_level(std::string_view text, LogLevel& out) {
  for (int i = 0; i < 4; ++i) {
    if (text == kNames[i]) {
      out = static_cast<LogLevel>(i);
      return true;
    }
  }
  return false;
}

std::string one_line(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  for (char c : message) {
    auto u = static_cast<unsigned char>(c);
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (u < 0x20 || u == 0x7f) out += fmt::format("\\x{:02x}", u);
    else out += c;
  }
  return out;
}

void log_line(LogLevel level, std::string_view message) {
  std::string line = fmt::format("{} {} {}\n", iso8601_now(), kNames[static_cast<int>(level)], one_line(message));
  // One write per line so concurrent writers (and the jail helper) do not interleave.
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = ::write(STDERR_FILENO, line.data() + off, line.size() - off);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

}  // namespace cellgate::common
