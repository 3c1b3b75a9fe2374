// SPDX-License-Identifier: BSD-3-Clause
// json_text: small checks and writers on JSON text.
#include "protocol/json_text.h"

#include <nlohmann/json.hpp>

#include "protocol/json_scan.h"

namespace cellgate::protocol {

nlohmann::json parse_untrusted_json(std::string_view text) {
  if (!detail::json_depth_within(text, detail::kMaxJsonDepth)) return nlohmann::json(nlohmann::json::value_t::discarded);
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

}  // namespace cellgate::protocol

namespace cellgate::protocol::detail {

void append_json_string(std::string& out, std::string_view s) {
  static constexpr char kDigits[] = "0123456789abcdef";
  out.push_back('"');
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out.append("\\\""); break;
      case '\\': out.append("\\\\"); break;
      case '\n': out.append("\\n"); break;
      case '\r': out.append("\\r"); break;
      case '\t': out.append("\\t"); break;
      case '\b': out.append("\\b"); break;
      case '\f': out.append("\\f"); break;
      default:
        if (u < 0x20) {
          out.append("\\u00");
          out.push_back(kDigits[u >> 4]);
          out.push_back(kDigits[u & 0xf]);
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

bool json_depth_within(std::string_view text, size_t limit) {
  size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return false;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return true;
}

bool is_json_object_text(std::string_view text) {
  size_t i = text.find_first_not_of(" \t\r\n");
  if (i == std::string_view::npos || text[i] != '{') return false;
  // The scanner checks the same grammar and UTF-8 in one pass, several times faster (this runs on
  // every part of every client message). It stops at kMaxScanDepth; nlohmann's accept() (the SAX
  // acceptor: an explicit stack, no tree, no exceptions) takes over for deeper text.
  return is_json_object(text) || nlohmann::json::accept(text);
}

}  // namespace cellgate::protocol::detail
