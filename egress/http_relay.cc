// SPDX-License-Identifier: BSD-3-Clause
// http_relay: the proxy's HTTP vocabulary — stream types, deadlines, refusals, hop-by-hop headers.
#include "egress/http_relay.h"

#include <algorithm>
#include <set>

namespace cellgate::egress {
namespace {

// Printable ASCII only: a reason phrase cannot carry bytes a client would choke on.
std::string printable(const std::string& text) {
  std::string out;
  for (char c : text.substr(0, 400)) out += c >= 0x20 && c < 0x7f ? c : '?';
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; });
  return out;
}

}  // namespace

http::response<http::string_body> refusal_response(http::status status, const std::string& reason) {
  const std::string line = "cellgate egress: " + printable(reason);
  http::response<http::string_body> res{status, 11};
  res.reason(line);
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.set("X-Cellgate-Egress", "refused");
  res.set(http::field::connection, "close");
  res.body() = line + "\n";
  res.prepare_payload();
  return res;
}

bool strip_hop_by_hop(http::request_header<>& h, bool keep_upgrade) {
  std::set<std::string> listed;
  auto range = h.equal_range(http::field::connection);
  for (auto it = range.first; it != range.second; ++it) {
    for (auto token : http::token_list(it->value())) listed.insert(lower(std::string_view(token.data(), token.size())));
  }
  bool expect_continue = false;
  if (auto e = h.find(http::field::expect); e != h.end()) expect_continue = lower(std::string_view(e->value().data(), e->value().size())) == "100-continue";
  std::vector<std::string> drop = {"connection", "proxy-connection", "keep-alive", "proxy-authorization",
                                   "proxy-authenticate", "te", "expect"};
  if (!keep_upgrade) drop.push_back("upgrade");
  for (const auto& name : listed) {
    if (!(keep_upgrade && name == "upgrade")) drop.push_back(name);
  }
  for (const auto& name : drop) h.erase(name);
  if (keep_upgrade) h.set(http::field::connection, "upgrade");
  return expect_continue;
}

bool split_absolute_form(std::string_view target, std::string& authority, std::string& origin_form) {
  constexpr std::string_view kScheme = "http://";
  if (target.size() < kScheme.size() || lower(target.substr(0, kScheme.size())) != kScheme) return false;
  std::string_view rest = target.substr(kScheme.size());
  size_t end = rest.find_first_of("/?#");
  authority = std::string(rest.substr(0, end));
  if (authority.empty() || authority.find('@') != std::string::npos) return false;  // no userinfo
  std::string_view tail = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  if (size_t hash = tail.find('#'); hash != std::string_view::npos) tail = tail.substr(0, hash);
  origin_form = tail.empty() || tail.front() != '/' ? "/" + std::string(tail) : std::string(tail);
  return true;
}

}  // namespace cellgate::egress
