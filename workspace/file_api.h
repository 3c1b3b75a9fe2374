// SPDX-License-Identifier: BSD-3-Clause
// file_api: bounded, path-validated file access to a live workspace tree for REST handlers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"

namespace cellgate::workspace {

enum class NodeType { kFile, kDir, kSymlink, kOther };

struct NodeInfo {
  std::string name;  // last component ("" for the root)
  NodeType type = NodeType::kOther;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint32_t mode = 0;
};

// A regular file opened for reading, and its size when it was opened.
struct OpenFile {
  common::UniqueFd fd;
  uint64_t size = 0;
};

struct FileApiLimits {
  uint64_t max_read_bytes = uint64_t{64} << 20;
  uint64_t max_write_bytes = uint64_t{64} << 20;
  size_t max_list_entries = 10'000;
};

// Paths are relative to the tree ("" or "/" = the root where allowed) and validated by
// normalize_relative_path; every lookup goes through openat2(RESOLVE_BENEATH|NO_SYMLINKS), so
// symlinks (anywhere in the path) are refused with kBadRequest, never followed. Special files
// are never read (O_PATH + fstat first, then O_NONBLOCK). Stateless and thread-safe; writes
// are atomic (temp + fsync + rename). New files and dirs take the owner of their parent dir.
class FileApi {
 public:
  explicit FileApi(std::string tree_path, FileApiLimits limits = {})
      : tree_(std::move(tree_path)), limits_(limits) {}

  common::Result<NodeInfo> stat(std::string_view path) const;
  // Regular files only (kBadRequest otherwise); over max_read_bytes → kTooLarge.
  common::Result<std::string> read_file(std::string_view path) const;
  // The same checks as read_file, without its size bound: for a caller that streams the content.
  common::Result<OpenFile> open_file(std::string_view path) const;
  // Sorted by name; more than max_list_entries → kTooLarge.
  common::Result<std::vector<NodeInfo>> list_dir(std::string_view path) const;
  // Creates or replaces a regular file (the parent must exist: kNotFound). Replacing a
  // directory or symlink → kConflict / kBadRequest.
  common::Status write_file(std::string_view path, std::string_view data) const;
  common::Status make_dir(std::string_view path) const;  // kConflict if it exists
  // Removes a file, symlink or special file; a directory only if empty or recursive.
  common::Status remove(std::string_view path, bool recursive) const;

 private:
  std::string tree_;
  FileApiLimits limits_;
};

}  // namespace cellgate::workspace
