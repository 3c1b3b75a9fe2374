// SPDX-License-Identifier: BSD-3-Clause
// file_replies: responses whose body is an open file, marked until Gateway::handle takes the file.
#include "gateway/file_replies.h"

#include <cstdlib>
#include <string>

#include "common/assert.h"

namespace cellgate::gateway {

namespace {
// Not a header any client sends or sees: Gateway::handle strips it before the response is written.
constexpr const char* kMarkField = "X-Cellgate-File-Body";
}  // namespace

void FileReplies::attach(http::Response& res, http::FileBody file) {
  const uint64_t id = ++next_;
  res.body().clear();
  res.content_length(file.size);
  res.set(kMarkField, std::to_string(id));
  files_.emplace(id, std::move(file));
}

std::optional<http::FileBody> FileReplies::take(http::Response& res) {
  auto field = res.find(kMarkField);
  if (field == res.end()) return std::nullopt;
  const uint64_t id = std::strtoull(std::string(field->value()).c_str(), nullptr, 10);
  res.erase(field);
  auto it = files_.find(id);
  CELLGATE_ASSERT(it != files_.end());  // only attach() marks a response, and each is taken once
  http::FileBody file = std::move(it->second);
  files_.erase(it);
  return file;
}

}  // namespace cellgate::gateway
