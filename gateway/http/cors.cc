// SPDX-License-Identifier: BSD-3-Clause
// cors: the origin allow-list, CORS headers and preflight answers.
#include "gateway/http/cors.h"

#include <algorithm>

namespace cellgate::http {

bool CorsPolicy::allowed(const Request& req) const {
  auto origin = req[field::origin];
  if (origin.empty()) return true;  // not a browser
  for (const auto& o : allow_)
    if (o == "*" || o == origin) return true;
  // Same origin: the Origin's host:port equals Host.
  std::string_view o(origin.data(), origin.size());
  auto scheme = o.find("://");
  if (scheme != std::string_view::npos) o = o.substr(scheme + 3);
  return o == std::string_view(req[field::host].data(), req[field::host].size());
}

void CorsPolicy::add_headers(const Request& req, Response& res) const {
  auto origin = req[field::origin];
  if (origin.empty() || allow_.empty() || !allowed(req)) return;
  bool any = std::find(allow_.begin(), allow_.end(), "*") != allow_.end();
  res.set(field::access_control_allow_origin, any ? std::string("*") : std::string(origin));
  res.set(field::vary, "Origin");
}

Response CorsPolicy::preflight(const Request& req) const {
  if (!allowed(req) || allow_.empty()) return error_response(req, common::Errc::kForbidden, "origin not allowed");
  Response res = empty_response(req);
  res.set(field::access_control_allow_methods, "GET, POST, PATCH, PUT, DELETE, OPTIONS");
  res.set(field::access_control_allow_headers, "Authorization, Content-Type, Accept, X-XSRFToken, Mcp-Session-Id");
  res.set(field::access_control_max_age, "600");
  return res;
}

}  // namespace cellgate::http
