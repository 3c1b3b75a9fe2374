// SPDX-License-Identifier: BSD-3-Clause
// safe_path: validating untrusted relative paths and opening them beneath a root without following symlinks.
#include "workspace/safe_path.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/core.h>

namespace cellgate::workspace {

using common::Errc;
using common::make_error;

common::Error errno_error(std::string_view what, int err) {
  Errc code = Errc::kInternal;
  if (err == ENOENT) code = Errc::kNotFound;
  // ELOOP: a symlink on the way (RESOLVE_NO_SYMLINKS / O_NOFOLLOW); EXDEV: an escape attempt
  // or a mount crossing (openat2(2)); ENOTDIR: a file used as a directory.
  if (err == ELOOP || err == EXDEV || err == ENOTDIR || err == EISDIR) code = Errc::kBadRequest;
  if (err == EFBIG) code = Errc::kTooLarge;
  if (err == ENOSPC || err == EDQUOT) code = Errc::kInsufficientStorage;  // a full workspace quota or volume
  if (err == EEXIST || err == ENOTEMPTY) code = Errc::kConflict;
  return make_error(code, fmt::format("{}: {}", what, std::strerror(err)), err);
}

common::Status validate_relative_path(std::string_view path) {
  if (path.empty()) return make_error(Errc::kBadRequest, "empty path");
  if (path.size() > kMaxPathBytes) return make_error(Errc::kBadRequest, "path too long");
  if (path.front() == '/') return make_error(Errc::kBadRequest, "absolute path");
  if (path.find('\0') != std::string_view::npos) return make_error(Errc::kBadRequest, "NUL in path");
  if (path.back() == '/') path.remove_suffix(1);
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    std::string_view part = path.substr(start, slash - start);
    if (part.empty()) return make_error(Errc::kBadRequest, "empty path component");
    if (part == "." || part == "..") return make_error(Errc::kBadRequest, "'.' or '..' in path");
    if (part.size() > kMaxNameBytes) return make_error(Errc::kBadRequest, "name too long");
    start = slash + 1;
  }
  return common::ok();
}

common::Result<std::string> normalize_relative_path(std::string_view path, bool allow_root) {
  if (allow_root && (path.empty() || path == "/")) return std::string();
  if (auto st = validate_relative_path(path); !st) return st.error();
  if (path.back() == '/') path.remove_suffix(1);
  return std::string(path);
}

common::Result<common::UniqueFd> open_beneath(int root_fd, std::string_view rel, int flags,
                                              mode_t mode) {
  std::string p = rel.empty() ? std::string(".") : std::string(rel);
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  for (int attempt = 0;; ++attempt) {
    long fd = ::syscall(SYS_openat2, root_fd, p.c_str(), &how, sizeof(how));
    if (fd >= 0) return common::UniqueFd(static_cast<int>(fd));
    if (errno == EINTR) continue;
    // EAGAIN: a concurrent rename raced the lookup (openat2(2), RESOLVE_BENEATH); retry is safe.
    if (errno == EAGAIN && attempt < 64) continue;
    return errno_error(fmt::format("open {:?}", p), errno);
  }
}

common::Result<ParentDir> open_parent_beneath(int root_fd, std::string_view rel) {
  size_t slash = rel.rfind('/');
  std::string_view dir = slash == std::string_view::npos ? std::string_view() : rel.substr(0, slash);
  std::string_view name = slash == std::string_view::npos ? rel : rel.substr(slash + 1);
  auto fd = open_beneath(root_fd, dir, O_RDONLY | O_DIRECTORY);
  if (!fd) return fd.error();
  return ParentDir{std::move(fd.value()), std::string(name)};
}

}  // namespace cellgate::workspace
