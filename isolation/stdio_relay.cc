// SPDX-License-Identifier: BSD-3-Clause
// stdio_relay: the jail writes its stdout/stderr into a pipe the helper copies to the host file.
#include "isolation/stdio_relay.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cellgate::isolation {

std::optional<StdioRelay> StdioRelay::wrap(int target_fd) {
  struct stat st {};
  if (::fstat(target_fd, &st) < 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  StdioRelay r;
  r.target_ = target_fd;
  r.host_.reset(::fcntl(target_fd, F_DUPFD_CLOEXEC, 3));
  int p[2];
  if (!r.host_ || ::pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) return std::nullopt;
  r.read_.reset(p[0]);
  common::UniqueFd write_end(p[1]);
  // The write end must block for the kernel (it is a plain stdout to it); only our end polls.
  (void)::fcntl(write_end.get(), F_SETFL, 0);
  if (::dup2(write_end.get(), target_fd) < 0) return std::nullopt;
  return r;
}

void StdioRelay::restore() {
  if (host_) (void)::dup2(host_.get(), target_);
}

bool StdioRelay::pump() {
  if (!read_) return false;
  char buf[65536];
  ssize_t n = ::read(read_.get(), buf, sizeof buf);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
  if (n <= 0) {
    read_.reset();
    return false;
  }
  for (ssize_t off = 0; off < n;) {
    ssize_t w = ::write(host_.get(), buf + off, static_cast<size_t>(n - off));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;  // a full or broken host file: the kernel's output is dropped, not queued
    off += w;
  }
  return true;
}

void StdioRelay::drain(int timeout_ms) {
  while (read_) {
    pollfd pfd{read_.get(), POLLIN, 0};
    if (::poll(&pfd, 1, timeout_ms) <= 0) break;
    if (!pump()) break;
  }
}

}  // namespace cellgate::isolation
