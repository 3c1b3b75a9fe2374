// SPDX-License-Identifier: BSD-3-Clause
// stdio_relay: the jail writes its stdout/stderr into pipes the helper copies to the host log,
// which keeps only its newest bytes, at a bounded rate.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/unique_fd.h"

namespace cellgate::isolation {

// Why a pipe at all: a regular file given as the helper's stdout/stderr (the kernel's log) would
// otherwise be re-openable for *reading* inside through /proc/self/fd/N: magic links check the
// inode's mode, not the fd's access mode (proc(5)). A pipe re-opened that way yields only the pipe.
//
// Who pays: the log's pages are written by the helper, so they are charged to the helper's memory
// cgroup (the gateway's), not to the kernel's. Each log is therefore kept to about `max_bytes`
// (when it reaches max_bytes, its newest half, from a line start, is moved to the front and the
// file truncated), and the helper reads at most `max_bytes` a second from the pipes (a token
// bucket): a kernel that writes faster blocks on its full pipe, so it spends its own CPU waiting,
// not the host's CPU on copying.
class StdioRelay {
 public:
  // runs in: the helper, just before clone. Each of fds 1 and 2 that is a regular file gets a
  // pipe's write end (for the child to inherit); the file is kept. Both on one file share its bound.
  static StdioRelay wrap(uint64_t max_bytes);
  // runs in: the helper, right after clone: fds 1 and 2 are the host files again (our own messages).
  void restore();
  // Puts the pipes that may be read now into fds[0..2) (fd -1 for the others) and returns the ms
  // until a pipe held back by the rate bound may be read again, or -1.
  int arm(pollfd fds[2]);
  // Copies what the ready pipes hold (within the rate bound) to their logs.
  void pump(const pollfd fds[2]);
  // After the jail ended: copies the rest until EOF (what the pipes still hold: bounded by their
  // capacity), waiting at most `timeout_ms` for slow writers.
  void drain(int timeout_ms);

 private:
  struct Log {
    dev_t dev = 0;
    ino_t ino = 0;
    common::UniqueFd append;   // the helper's stdout/stderr description (O_APPEND, shared)
    common::UniqueFd rewrite;  // the same file without O_APPEND: pwrite honours offsets (pwrite(2) BUGS)
    double tokens = 0;         // bytes that may be read now
    int64_t refilled_ns = 0;
  };
  struct Pipe {
    int target = -1;
    size_t log = 0;
    common::UniqueFd host;  // the original target, put back by restore()
    common::UniqueFd read;
  };
  // Bytes Log `i` may take now (refilling its bucket), and the ms until it can take a chunk.
  size_t budget(Log& log, int& wait_ms);
  bool copy(Pipe& pipe, size_t limit);
  void append(Log& log, const char* data, size_t n);
  void compact(Log& log);

  uint64_t max_bytes_ = 0;
  std::vector<Log> logs_;
  std::vector<Pipe> pipes_;
};

}  // namespace cellgate::isolation
