// SPDX-License-Identifier: BSD-3-Clause
// http_client: cellgate's REST API over HTTP/1.1 (Boost.Beast, synchronous, one connection per call).
#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "common/result.h"
#include "client/rest.h"

namespace cellgate::client {

// Parses "http://host[:port][/base/]" (https is refused: the client has no TLS). kBadRequest on errors.
struct BaseUrl {
  std::string host;
  std::string port;
  std::string base;  // always starts and ends with '/'
};
common::Result<BaseUrl> parse_base_url(const std::string& url);

// Escapes one path segment (RFC 3986 unreserved characters pass through).
std::string escape_segment(const std::string& segment);

// A RestApi over plain HTTP/1.1, one connection per call, with `Authorization: token T`. Blocks the
// calling thread for up to call.timeout; never call it on an io_context thread that serves the target.
// Replies are bounded to kMaxReplyBytes. Thread-safe (no shared mutable state).
class HttpClient : public RestApi {
 public:
  static constexpr size_t kMaxReplyBytes = 64u << 20;
  explicit HttpClient(BaseUrl url) : url_(std::move(url)) {}
  common::Result<RestReply> call(const RestCall& call, const std::string& token) override;
  // PUT of raw bytes (application/octet-stream), for file uploads; path as in RestCall.
  common::Result<RestReply> put_bytes(const std::string& path, std::string bytes, const std::string& token,
                                      std::chrono::seconds timeout);
  // Makes calls in flight fail now, and later calls fail at once (kUnavailable): lets a server that calls
  // itself through this client shut down without waiting for their timeouts. Thread-safe.
  void stop();

 private:
  common::Result<RestReply> exchange(boost::beast::http::request<boost::beast::http::string_body> req,
                                     std::chrono::seconds timeout);

  BaseUrl url_;
  std::mutex mu_;
  bool stopped_ = false;
  std::set<boost::asio::io_context*> active_;  // one private io_context per call in flight
};

}  // namespace cellgate::client
