// SPDX-License-Identifier: BSD-3-Clause
// http_backend: the Backend that calls cellgate's REST API over HTTP (Boost.Beast, synchronous).
#pragma once

#include <memory>
#include <string>

#include "common/result.h"
#include "mcp/backend.h"

namespace cellgate::mcp {

// Parses "http://host[:port][/base/]" (https is refused: the client has no TLS). kBadRequest on errors.
struct BaseUrl {
  std::string host;
  std::string port;
  std::string base;  // always starts and ends with '/'
};
common::Result<BaseUrl> parse_base_url(const std::string& url);

// Escapes one path segment (RFC 3986 unreserved characters pass through).
std::string escape_segment(const std::string& segment);

// A Backend over plain HTTP/1.1, one connection per call, with `Authorization: token T`. Blocks the
// calling thread for up to call.timeout; never call it on an io_context thread that serves the target.
// Replies are bounded to kMaxReplyBytes. Thread-safe (no shared mutable state).
class HttpBackend : public Backend {
 public:
  static constexpr size_t kMaxReplyBytes = 64u << 20;
  explicit HttpBackend(BaseUrl url) : url_(std::move(url)) {}
  common::Result<RestReply> call(const RestCall& call, const std::string& token) override;

 private:
  BaseUrl url_;
};

}  // namespace cellgate::mcp
