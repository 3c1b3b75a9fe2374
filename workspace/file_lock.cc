// SPDX-License-Identifier: BSD-3-Clause
// file_lock: flock(2)-based shared/exclusive locks that hold across threads and processes.
#include "workspace/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>

#include <cerrno>

#include "workspace/safe_path.h"

namespace cellgate::workspace {

common::Result<FileLock> FileLock::acquire(const std::string& path, Mode mode) {
  common::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return errno_error("open lock " + path, errno);
  int op = mode == Mode::kShared ? LOCK_SH : LOCK_EX;
  while (::flock(fd.get(), op) != 0) {
    if (errno != EINTR) return errno_error("flock " + path, errno);
  }
  return FileLock(std::move(fd));
}

}  // namespace cellgate::workspace
