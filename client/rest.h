// SPDX-License-Identifier: BSD-3-Clause
// rest: cellgate's REST API one call at a time, as its clients see it (a test seam; http_client.h
// is the real one).
#pragma once

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace cellgate::client {

struct RestCall {
  std::string method;                 // "GET", "POST", "DELETE"
  std::string path;                   // below the API root, e.g. "api/kernels" (segments already escaped)
  nlohmann::json body;                // null = no body
  std::chrono::seconds timeout{300};  // for the whole exchange
};

struct RestReply {
  int status = 0;
  nlohmann::json body;  // null for an empty body; a string when the body is not JSON
};

// Performs REST calls on cellgate on behalf of the holder of token. A reply with any HTTP status is a
// value; an Error means the server could not be reached or answered something that is not HTTP.
// Implementations are thread-safe: one serves every MCP session of a server.
class RestApi {
 public:
  virtual ~RestApi() = default;
  virtual common::Result<RestReply> call(const RestCall& call, const std::string& token) = 0;
};

}  // namespace cellgate::client
