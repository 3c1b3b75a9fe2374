// SPDX-License-Identifier: BSD-3-Clause
// io_util: EINTR-safe reads/writes, bounded whole-file reads and crash-safe atomic file replacement.
#include "workspace/io_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/core.h>

#include "common/fd_io.h"
#include "common/random.h"
#include "common/unique_fd.h"
#include "workspace/safe_path.h"

namespace cellgate::workspace {

using common::Errc;
using common::make_error;
using common::UniqueFd;

namespace {
constexpr int kMaxRemoveDepth = 64;

// Removes dirfd/name. A subtree deeper than kMaxRemoveDepth is renamed up into base_fd under a
// fresh name and queued, so trees of any depth go away with bounded recursion and fds.
common::Status remove_tree_depth(int base_fd, std::vector<std::string>& queue, int dirfd,
                                 const std::string& name, int depth) {
  if (::unlinkat(dirfd, name.c_str(), 0) == 0 || errno == ENOENT) return common::ok();
  if (errno != EISDIR && errno != EPERM) return errno_error("unlink", errno);
  if (depth >= kMaxRemoveDepth) {
    std::string moved = ".cellgate-rm-" + common::random_hex(8);
    if (::renameat(dirfd, name.c_str(), base_fd, moved.c_str()) != 0) return errno_error("relocate deep dir", errno);
    queue.push_back(std::move(moved));
    return common::ok();
  }
  UniqueFd sub(::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!sub) return errno == ENOENT ? common::ok() : errno_error("open dir for removal", errno);
  auto names = list_dir_at(sub.get(), "");
  if (!names) return names.error();
  for (const auto& n : *names) {
    if (auto st = remove_tree_depth(base_fd, queue, sub.get(), n, depth + 1); !st) return st;
  }
  if (::unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
    return errno_error("rmdir", errno);
  }
  return common::ok();
}
}  // namespace

common::Result<size_t> read_some(int fd, void* buf, size_t n) {
  for (;;) {
    ssize_t r = ::read(fd, buf, n);
    if (r >= 0) return static_cast<size_t>(r);
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return make_error(Errc::kBadRequest, "would block (not a regular file)", EAGAIN);
    return errno_error("read", errno);
  }
}

common::Status write_all(int fd, const void* buf, size_t n) {
  if (int err = common::write_all(fd, buf, n)) return errno_error("write", err);
  return common::ok();
}

common::Result<std::string> read_all(int fd, uint64_t max_bytes) {
  std::string out;
  char buf[65536];
  for (;;) {
    auto n = read_some(fd, buf, sizeof(buf));
    if (!n) return n.error();
    if (*n == 0) return out;
    if (out.size() + *n > max_bytes) return make_error(Errc::kTooLarge, "file larger than the read limit");
    out.append(buf, *n);
  }
}

common::Result<std::string> read_file_at(int dirfd, const std::string& name, uint64_t max_bytes) {
  UniqueFd fd(::openat(dirfd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) return errno_error("open " + name, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return errno_error("fstat " + name, errno);
  if (!S_ISREG(st.st_mode)) return make_error(Errc::kBadRequest, name + ": not a regular file");
  return read_all(fd.get(), max_bytes);
}

common::Status write_file_atomic(int dirfd, const std::string& name, std::string_view data,
                                 const std::function<void()>& before_rename) {
  std::string temp = fmt::format(".{}.tmp-{}", name, common::random_hex(6));
  UniqueFd fd(::openat(dirfd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return errno_error("create " + temp, errno);
  auto fail = [&](common::Error e) -> common::Status {
    ::unlinkat(dirfd, temp.c_str(), 0);
    return e;
  };
  if (auto st = write_all(fd.get(), data.data(), data.size()); !st) return fail(st.error());
  if (::fsync(fd.get()) != 0) return fail(errno_error("fsync " + temp, errno));
  if (before_rename) before_rename();
  if (::renameat(dirfd, temp.c_str(), dirfd, name.c_str()) != 0) return fail(errno_error("rename " + name, errno));
  if (::fsync(dirfd) != 0) return errno_error("fsync dir", errno);
  return common::ok();
}

common::Status replace_file(int dirfd, const std::string& name, std::string_view data) {
  std::string temp = fmt::format(".{}.tmp-{}", name, common::random_hex(6));
  UniqueFd fd(::openat(dirfd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return errno_error("create " + temp, errno);
  common::Status st = write_all(fd.get(), data.data(), data.size());
  if (st && ::renameat(dirfd, temp.c_str(), dirfd, name.c_str()) != 0) st = errno_error("rename " + name, errno);
  if (!st) ::unlinkat(dirfd, temp.c_str(), 0);
  return st;
}

common::Result<std::vector<std::string>> list_dir_at(int dirfd, const std::string& sub, size_t max_entries) {
  int fd = ::openat(dirfd, sub.empty() ? "." : sub.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return errno_error("open dir " + sub, errno);
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    ::close(fd);
    return errno_error("fdopendir", errno);
  }
  std::vector<std::string> names;
  errno = 0;
  while (dirent* e = ::readdir(dir)) {
    std::string_view n = e->d_name;
    if (n == "." || n == "..") continue;
    if (names.size() >= max_entries) {
      ::closedir(dir);
      return make_error(Errc::kTooLarge, fmt::format("directory has more than {} entries", max_entries));
    }
    names.emplace_back(n);
  }
  int err = errno;
  ::closedir(dir);
  if (err != 0) return errno_error("readdir", err);
  return names;
}

common::Status remove_tree_at(int dirfd, const std::string& name) {
  std::vector<std::string> queue{name};
  while (!queue.empty()) {
    std::string next = std::move(queue.back());
    queue.pop_back();
    if (auto st = remove_tree_depth(dirfd, queue, dirfd, next, 0); !st) return st;
  }
  return common::ok();
}

}  // namespace cellgate::workspace
