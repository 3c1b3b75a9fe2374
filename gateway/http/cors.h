// SPDX-License-Identifier: BSD-3-Clause
// cors: which browser origins may call the gateway (--allow-origin), the CORS headers of their
// responses and the answer to their preflight requests. A WebSocket upgrade is checked the same way.
#pragma once

#include <string>
#include <vector>

#include "gateway/http/types.h"

namespace cellgate::http {

class CorsPolicy {
 public:
  // allow: origins ("*" = any); same-origin requests are always allowed.
  explicit CorsPolicy(std::vector<std::string> allow) : allow_(std::move(allow)) {}
  // No Origin (not a browser), an allowed one, or the request's own (Origin's host:port is Host).
  bool allowed(const Request& req) const;
  // Access-Control-Allow-Origin and Vary for an allowed cross-origin request.
  void add_headers(const Request& req, Response& res) const;
  // The answer to an OPTIONS preflight, which browsers send without credentials.
  Response preflight(const Request& req) const;

 private:
  std::vector<std::string> allow_;
};

}  // namespace cellgate::http
