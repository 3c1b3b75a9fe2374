// SPDX-License-Identifier: BSD-3-Clause
// file_reply: responses whose body is an open file, written by the session loop in pieces.
#include "gateway/file_reply.h"

#include <fcntl.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/core.h>

#include "common/assert.h"

namespace cellgate::gateway {

namespace {
// Not a header any client sends or sees: serve_requests strips it before writing the response.
constexpr const char* kMarkField = "X-Cellgate-File-Body";
}  // namespace

common::Result<common::UniqueFd> open_unnamed_file(const std::string& dir) {
  common::UniqueFd fd(::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
  if (fd) return fd;
  // O_TMPFILE needs filesystem support (open(2): EOPNOTSUPP, or EISDIR on kernels without it).
  if (errno != EOPNOTSUPP && errno != EISDIR)
    return common::make_error(common::Errc::kInternal, fmt::format("cannot create a file in {}: {}", dir, std::strerror(errno)));
  std::string path = dir + "/.reply-XXXXXX";
  fd.reset(::mkostemp(path.data(), O_CLOEXEC));
  if (!fd) return common::make_error(common::Errc::kInternal, fmt::format("cannot create a file in {}: {}", dir, std::strerror(errno)));
  ::unlink(path.c_str());
  return fd;
}

void FileReplies::attach(Response& res, FileBody file) {
  const uint64_t id = ++next_;
  res.body().clear();
  res.content_length(file.size);
  res.set(kMarkField, std::to_string(id));
  files_.emplace(id, std::move(file));
}

std::optional<FileBody> FileReplies::take(Response& res) {
  auto field = res.find(kMarkField);
  if (field == res.end()) return std::nullopt;
  const uint64_t id = std::strtoull(std::string(field->value()).c_str(), nullptr, 10);
  res.erase(field);
  auto it = files_.find(id);
  CELLGATE_ASSERT(it != files_.end());  // only attach() marks a response, and each is taken once
  FileBody file = std::move(it->second);
  files_.erase(it);
  return file;
}

}  // namespace cellgate::gateway
