// SPDX-License-Identifier: BSD-3-Clause
// fd_io: whole writes to a file descriptor, retrying short writes and EINTR: the one write loop.
#pragma once

#include <errno.h>
#include <unistd.h>

#include <cstddef>
#include <string_view>

namespace cellgate::common {

// Writes all n bytes of data to fd. Returns 0, or the errno of the write(2) that failed (EIO when a
// write wrote nothing, which a pipe or file never does for n > 0). runs in: any thread, and the jail's
// child: it calls write(2) only and is defined here, inline, so the child's objects carry it and
// tests/lint/child_symbols_test.sh sees what it calls.
inline int write_all(int fd, const void* data, size_t n) noexcept {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (w == 0) return EIO;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return 0;
}

inline int write_all(int fd, std::string_view data) noexcept { return write_all(fd, data.data(), data.size()); }

}  // namespace cellgate::common
