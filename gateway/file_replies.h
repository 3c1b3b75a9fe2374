// SPDX-License-Identifier: BSD-3-Clause
// file_replies: responses whose body is an open file, carried through handlers that return a Response
// (an internal header names the file) until the route handlers return http::Reply themselves.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "gateway/http/file_body.h"
#include "gateway/http/types.h"

namespace cellgate::gateway {

// Io thread only. attach() marks a response; take() removes the mark and hands the file to whoever
// writes the response. Gateway::handle takes every response's file.
class FileReplies {
 public:
  void attach(http::Response& res, http::FileBody file);
  std::optional<http::FileBody> take(http::Response& res);
  size_t pending() const { return files_.size(); }

 private:
  uint64_t next_ = 0;
  std::map<uint64_t, http::FileBody> files_;
};

}  // namespace cellgate::gateway
