// SPDX-License-Identifier: BSD-3-Clause
// stdio_relay: the jail writes its stdout/stderr into pipes the helper copies to the host log,
// which keeps only its newest bytes, at a bounded rate.
#include "isolation/stdio_relay.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace cellgate::isolation {
namespace {

constexpr size_t kChunk = 65536;
// Below this many tokens a pipe waits rather than being read in slivers.
constexpr size_t kMinRead = 4096;
// How far past the cut a line start is looked for.
constexpr size_t kLineSearch = 4096;
// What drain() copies at most per pipe: what a pipe can hold (pipe-max-size is 1 MiB by default).
constexpr size_t kMaxDrain = 4 << 20;

int64_t now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

StdioRelay StdioRelay::wrap(uint64_t max_bytes) {
  StdioRelay r;
  r.max_bytes_ = max_bytes;
  for (int target : {1, 2}) {
    struct stat st {};
    if (::fstat(target, &st) < 0 || !S_ISREG(st.st_mode)) continue;
    size_t log = r.logs_.size();
    for (size_t i = 0; i < r.logs_.size(); ++i) {
      if (r.logs_[i].dev == st.st_dev && r.logs_[i].ino == st.st_ino) log = i;
    }
    if (log == r.logs_.size()) {
      Log l;
      l.dev = st.st_dev;
      l.ino = st.st_ino;
      l.append.reset(::fcntl(target, F_DUPFD_CLOEXEC, 3));
      // A second open file description of the same file, for the in-place rewrite.
      l.rewrite.reset(::open(("/proc/self/fd/" + std::to_string(target)).c_str(), O_RDWR | O_CLOEXEC));
      if (!l.append || !l.rewrite) continue;
      l.tokens = static_cast<double>(max_bytes);
      l.refilled_ns = now_ns();
      r.logs_.push_back(std::move(l));
      r.compact(r.logs_.back());  // a log kept from earlier runs may be over the bound already
    }
    Pipe p;
    p.target = target;
    p.log = log;
    p.host.reset(::fcntl(target, F_DUPFD_CLOEXEC, 3));
    int fds[2];
    if (!p.host || ::pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0) continue;
    p.read.reset(fds[0]);
    common::UniqueFd write_end(fds[1]);
    // The write end must block for the kernel (it is a plain stdout to it); only our end polls.
    (void)::fcntl(write_end.get(), F_SETFL, 0);
    if (::dup2(write_end.get(), target) < 0) continue;
    r.pipes_.push_back(std::move(p));
  }
  return r;
}

void StdioRelay::restore() {
  for (auto& p : pipes_) {
    if (p.host) (void)::dup2(p.host.get(), p.target);
  }
}

size_t StdioRelay::budget(Log& log, int& wait_ms) {
  const double rate = static_cast<double>(max_bytes_);  // bytes per second
  int64_t now = now_ns();
  log.tokens = std::min(rate, log.tokens + rate * static_cast<double>(now - log.refilled_ns) / 1e9);
  log.refilled_ns = now;
  if (log.tokens >= static_cast<double>(kMinRead)) return static_cast<size_t>(log.tokens);
  wait_ms = static_cast<int>((static_cast<double>(kMinRead) - log.tokens) * 1000.0 / rate) + 1;
  return 0;
}

int StdioRelay::arm(pollfd fds[2]) {
  int wait = -1;
  for (size_t i = 0; i < 2; ++i) {
    fds[i] = pollfd{-1, POLLIN, 0};
    if (i >= pipes_.size() || !pipes_[i].read) continue;
    int wait_ms = -1;
    if (budget(logs_[pipes_[i].log], wait_ms) > 0) fds[i].fd = pipes_[i].read.get();
    else if (wait < 0 || wait_ms < wait) wait = wait_ms;
  }
  return wait;
}

void StdioRelay::pump(const pollfd fds[2]) {
  for (size_t i = 0; i < 2 && i < pipes_.size(); ++i) {
    if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    int wait_ms = -1;
    size_t allowed = budget(logs_[pipes_[i].log], wait_ms);
    if (allowed > 0) copy(pipes_[i], allowed);
  }
}

bool StdioRelay::copy(Pipe& pipe, size_t limit) {
  if (!pipe.read) return false;
  char buf[kChunk];
  ssize_t n = ::read(pipe.read.get(), buf, std::min(limit, sizeof buf));
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
  if (n <= 0) {
    pipe.read.reset();
    return false;
  }
  Log& log = logs_[pipe.log];
  log.tokens -= static_cast<double>(n);
  append(log, buf, static_cast<size_t>(n));
  return true;
}

void StdioRelay::append(Log& log, const char* data, size_t n) {
  for (size_t off = 0; off < n;) {
    ssize_t w = ::write(log.append.get(), data + off, n - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;  // a full or broken host file: the kernel's output is dropped, not queued
    off += static_cast<size_t>(w);
  }
  compact(log);
}

void StdioRelay::compact(Log& log) {
  struct stat st {};
  if (::fstat(log.rewrite.get(), &st) < 0 || static_cast<uint64_t>(st.st_size) <= max_bytes_) return;
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  uint64_t from = size - max_bytes_ / 2;
  // Start the kept part at a line start when one is near, so the log never opens mid-line.
  char buf[kChunk];
  ssize_t got = ::pread(log.rewrite.get(), buf, kLineSearch, static_cast<off_t>(from));
  if (got > 0) {
    const char* nl = static_cast<const char*>(::memchr(buf, '\n', static_cast<size_t>(got)));
    if (nl != nullptr && nl + 1 < buf + got) from += static_cast<uint64_t>(nl + 1 - buf);
  }
  uint64_t to = 0;
  while (from < size) {
    ssize_t n = ::pread(log.rewrite.get(), buf, sizeof buf, static_cast<off_t>(from));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    ssize_t w = ::pwrite(log.rewrite.get(), buf, static_cast<size_t>(n), static_cast<off_t>(to));
    if (w <= 0) break;
    from += static_cast<uint64_t>(w);
    to += static_cast<uint64_t>(w);
  }
  // O_APPEND writes (ours and the helper's own messages) continue at the new end.
  (void)::ftruncate(log.rewrite.get(), static_cast<off_t>(to));
}

void StdioRelay::drain(int timeout_ms) {
  for (auto& pipe : pipes_) {
    for (size_t copied = 0; pipe.read && copied < kMaxDrain; copied += kChunk) {
      pollfd pfd{pipe.read.get(), POLLIN, 0};
      if (::poll(&pfd, 1, timeout_ms) <= 0) break;
      if (!copy(pipe, kChunk)) break;
    }
  }
}

}  // namespace cellgate::isolation
