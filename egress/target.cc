// SPDX-License-Identifier: BSD-3-Clause
// target: a destination (host and port) as a proxy request names it, in canonical form.
#include "egress/target.h"

#include <algorithm>

namespace cellgate::egress {
namespace {

bool label_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

bool numeric_label(std::string_view label) {
  if (label.size() > 2 && label[0] == '0' && label[1] == 'x') {
    return std::all_of(label.begin() + 2, label.end(), [](char c) {
      return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    });
  }
  return std::all_of(label.begin(), label.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::optional<uint16_t> parse_port(std::string_view text) {
  if (text.empty() || text.size() > 5) return std::nullopt;
  unsigned v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  if (v == 0 || v > 65535) return std::nullopt;
  return static_cast<uint16_t>(v);
}

std::string Target::authority() const {
  if (ip && ip->is_v6()) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

std::optional<std::string> canonical_host_name(std::string_view text) {
  if (!text.empty() && text.back() == '.') text.remove_suffix(1);
  if (text.empty() || text.size() > 253) return std::nullopt;
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  });
  size_t start = 0;
  std::string_view last;
  for (;;) {
    size_t dot = out.find('.', start);
    std::string_view label = std::string_view(out).substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return std::nullopt;
    if (!std::all_of(label.begin(), label.end(), label_char)) return std::nullopt;
    last = label;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (numeric_label(last)) return std::nullopt;
  return out;
}

std::optional<Target> parse_authority(std::string_view text, std::optional<uint16_t> default_port) {
  if (text.empty() || text.size() > 260) return std::nullopt;
  Target t;
  std::string_view host, port;
  if (text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = text.substr(1, close - 1);
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty() && (rest.front() != ':' || rest.size() == 1)) return std::nullopt;
    if (!rest.empty()) port = rest.substr(1);
    auto ip = parse_ip_literal(host);
    if (!ip || !ip->is_v6()) return std::nullopt;
    t.ip = ip;
    t.host = ip->to_string();
  } else {
    size_t colon = text.rfind(':');
    host = text.substr(0, colon);
    if (colon != std::string_view::npos) {
      port = text.substr(colon + 1);
      if (port.empty()) return std::nullopt;
    }
    if (host.find(':') != std::string_view::npos) return std::nullopt;  // bare IPv6 needs brackets
    if (auto ip = parse_ip_literal(host)) {
      t.ip = ip;
      t.host = ip->to_string();
    } else if (auto name = canonical_host_name(host)) {
      t.host = std::move(*name);
    } else {
      return std::nullopt;
    }
  }
  if (!port.empty()) {
    auto p = parse_port(port);
    if (!p) return std::nullopt;
    t.port = *p;
  } else if (default_port) {
    t.port = *default_port;
  } else {
    return std::nullopt;
  }
  return t;
}

bool host_matches(std::string_view pattern, std::string_view host) {
  if (pattern.starts_with("*.")) {
    std::string_view suffix = pattern.substr(1);  // ".example.com"
    return host.size() > suffix.size() && host.ends_with(suffix);
  }
  return pattern == host;
}

}  // namespace cellgate::egress
