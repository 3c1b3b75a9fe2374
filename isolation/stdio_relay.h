// SPDX-License-Identifier: BSD-3-Clause
// stdio_relay: the jail writes its stdout/stderr into a pipe the helper copies to the host file.
#pragma once

#include <optional>

#include "common/unique_fd.h"

namespace cellgate::isolation {

// A regular file given as the helper's stdout/stderr (a shared log, say) would otherwise be
// re-openable for *reading* inside through /proc/self/fd/N: magic links check the inode's mode,
// not the fd's access mode (proc(5)). A pipe re-opened that way yields only the pipe.
class StdioRelay {
 public:
  // runs in: the helper, just before clone. When `target_fd` refers to a regular file, puts a
  // pipe's write end there (for the child to inherit) and keeps the file; otherwise nullopt.
  static std::optional<StdioRelay> wrap(int target_fd);
  // runs in: the helper, right after clone: `target_fd` is the host file again (our own messages).
  void restore();
  int read_fd() const { return read_.get(); }
  // Copies what the pipe holds now (bounded per call) to the file; false once the pipe is at EOF.
  bool pump();
  // After the jail ended: copies the rest until EOF, waiting at most `timeout_ms` for slow writers.
  void drain(int timeout_ms);

 private:
  int target_ = -1;
  common::UniqueFd host_, read_;
};

}  // namespace cellgate::isolation
