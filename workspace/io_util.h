// SPDX-License-Identifier: BSD-3-Clause
// io_util: EINTR-safe reads/writes, bounded whole-file reads and crash-safe atomic file replacement.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace cellgate::workspace {

// read(2) retried on EINTR; 0 at EOF. EAGAIN (a FIFO opened O_NONBLOCK) → kBadRequest.
common::Result<size_t> read_some(int fd, void* buf, size_t n);
// common::write_all as a Status naming the failed write.
common::Status write_all(int fd, const void* buf, size_t n);
// Reads all of fd; more than max_bytes → kTooLarge.
common::Result<std::string> read_all(int fd, uint64_t max_bytes);
// Reads dirfd/name (no symlink following) up to max_bytes.
common::Result<std::string> read_file_at(int dirfd, const std::string& name, uint64_t max_bytes);
// Crash-safe replace of dirfd/name: write a temp beside it, fsync, rename(2), fsync dirfd.
// After a crash, name holds either the old or the new content, never a mix.
// before_rename (a test seam) runs after the temp is durable, just before the rename.
common::Status write_file_atomic(int dirfd, const std::string& name, std::string_view data,
                                 const std::function<void()>& before_rename = {});
// Atomic (old or new content) but not durable: for caches that may be lost in a crash.
common::Status replace_file(int dirfd, const std::string& name, std::string_view data);
// Names in dirfd/sub ("" = dirfd itself), without "." and "..", unsorted. More than
// max_entries → kTooLarge (memory stays bounded however many entries the directory holds).
common::Result<std::vector<std::string>> list_dir_at(int dirfd, const std::string& sub,
                                                     size_t max_entries = SIZE_MAX);
// Removes dirfd/name whatever it is (recursively for directories, any depth, with bounded
// recursion), never following symlinks. ENOENT is success.
common::Status remove_tree_at(int dirfd, const std::string& name);

}  // namespace cellgate::workspace
