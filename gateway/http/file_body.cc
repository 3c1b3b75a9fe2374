// SPDX-License-Identifier: BSD-3-Clause
// file_body: a response body that is an open file.
#include "gateway/http/file_body.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/core.h>

namespace cellgate::http {

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

}  // namespace cellgate::http
