// SPDX-License-Identifier: BSD-3-Clause
// safe_path: validating untrusted relative paths and opening them beneath a root without following symlinks.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "common/result.h"
#include "common/unique_fd.h"

namespace cellgate::workspace {

inline constexpr size_t kMaxPathBytes = 4096;
inline constexpr size_t kMaxNameBytes = 255;

// Accepts "a/b/c" (one trailing '/' tolerated). Rejects empty, absolute, NUL, ".", "..", empty
// components and over-long paths or names with kBadRequest. Pure; thread-safe.
common::Status validate_relative_path(std::string_view path);
// validate_relative_path, or "" (meaning the root itself) when allow_root; returns the path
// with any trailing '/' removed.
common::Result<std::string> normalize_relative_path(std::string_view path, bool allow_root);

// openat2(root_fd, rel, flags) with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS|
// RESOLVE_NO_XDEV: no component (also the last) may be a symlink, nothing can escape root_fd.
// rel "" opens root_fd itself ("."). Errors: kNotFound (ENOENT), kBadRequest (ELOOP/EXDEV/
// ENOTDIR: a symlink or escape), kInternal otherwise. Thread-safe.
common::Result<common::UniqueFd> open_beneath(int root_fd, std::string_view rel, int flags,
                                              mode_t mode = 0);

// The directory holding rel's last component, opened beneath root_fd, and that last name.
struct ParentDir {
  common::UniqueFd fd;
  std::string name;
};
common::Result<ParentDir> open_parent_beneath(int root_fd, std::string_view rel);

// Maps an errno from a path operation to an Error with context.
common::Error errno_error(std::string_view what, int err);

}  // namespace cellgate::workspace
