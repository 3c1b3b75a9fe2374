// SPDX-License-Identifier: BSD-3-Clause
// file_lock: flock(2)-based shared/exclusive locks that hold across threads and processes.
#pragma once

#include <string>

#include "common/result.h"
#include "common/unique_fd.h"

namespace cellgate::workspace {

// Holds a flock on its own open file description, so two FileLocks on the same path conflict
// even inside one process (flock(2): locks belong to the open file description). Released
// on destruction. Blocks until granted.
class FileLock {
 public:
  enum class Mode { kShared, kExclusive };
  static common::Result<FileLock> acquire(const std::string& path, Mode mode);
  FileLock() = default;

 private:
  explicit FileLock(common::UniqueFd fd) : fd_(std::move(fd)) {}
  common::UniqueFd fd_;
};

}  // namespace cellgate::workspace
