// SPDX-License-Identifier: BSD-3-Clause
// tree_scan: a no-follow walk of a live workspace with a git-index-style stat cache.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/result.h"
#include "workspace/manifest.h"

namespace cellgate::workspace {

// A file is assumed unchanged when all four match (jail-on-this-machine.md §5).
struct StatKey {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  uint64_t ino = 0;
  bool operator==(const StatKey&) const = default;
};
struct IndexEntry {
  StatKey key;
  std::string hash;
  bool sparse = false;  // the hash is of the file's sparse object (sparse_file.h)
};
using StatIndex = std::unordered_map<std::string, IndexEntry>;  // path → cached hash

std::string serialize_index(const StatIndex& index);
// A damaged index is only a cache: callers treat an error as an empty index.
common::Result<StatIndex> parse_index(std::string_view text);

struct ScanLimits {
  uint64_t max_bytes = UINT64_MAX;  // sum of what regular files hold (their size, or their blocks when fewer: holes are free)
  uint64_t max_files = UINT64_MAX;  // entries of any type
  int max_depth = 256;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

struct ScanResult {
  std::vector<Entry> entries;         // sorted by path; files carry hash ("" if hash_file declined)
  StatIndex index;                    // fresh stat cache for the files hashed or reused
  std::vector<std::string> skipped;   // FIFOs, sockets, devices, too deep or too long paths
  uint64_t files_hashed = 0;
  uint64_t files_reused = 0;
  uint64_t bytes_hashed = 0;
};

// What hashing a file found: its hash (empty: "not needed"), its size, the bytes read, and whether
// the hash is of its sparse object (sparse_file.h).
struct FileHash {
  std::string hash;
  uint64_t size = 0;
  uint64_t bytes_read = 0;
  bool sparse = false;
};
// Reads a regular file (an fd opened O_NOFOLLOW|O_NONBLOCK). Errors abort the scan.
using HashFileFn = std::function<common::Result<FileHash>(int fd, const Entry&)>;
// Whether a cached hash may be reused (e.g. its object still exists).
using ReuseFn = std::function<bool(const std::string& hash)>;

// Walks root_fd with dirfds, never following symlinks and never opening special files.
// Caps → kTooLarge, deadline → kTimeout. Entries that vanish mid-walk are ignored. Not thread-safe per tree.
common::Result<ScanResult> scan_tree(int root_fd, const StatIndex& previous, const ScanLimits& limits,
                                     const HashFileFn& hash_file, const ReuseFn& can_reuse);

}  // namespace cellgate::workspace
