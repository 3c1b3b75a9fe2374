// SPDX-License-Identifier: BSD-3-Clause
#include "kernel-launcher/memory_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include <fmt/format.h>

#include "common/unique_fd.h"

namespace cellgate::launcher {
namespace {

bool in_memory(int fd) {
  struct statfs fs {};
  return ::fstatfs(fd, &fs) == 0 && (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC);
}

// Whether path is the root of a mount (its parent is on another device).
bool own_mount(const std::string& path, int fd) {
  struct stat self {}, parent {};
  return ::fstat(fd, &self) == 0 && ::stat((path + "/..").c_str(), &parent) == 0 && self.st_dev != parent.st_dev;
}

bool empty_dir(int fd) {
  DIR* d = ::fdopendir(::dup(fd));
  if (d == nullptr) return false;
  bool empty = true;
  while (dirent* e = ::readdir(d)) {
    if (std::string_view(e->d_name) != "." && std::string_view(e->d_name) != "..") {
      empty = false;
      break;
    }
  }
  ::closedir(d);
  return empty;
}

}  // namespace

common::Result<MemoryDir> ensure_memory_dir(const std::string& path, mode_t mode, uint64_t size_bytes) {
  using common::Errc;
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return common::make_error(Errc::kInternal, fmt::format("cannot make {}: {}", path, ec.message()));
  common::UniqueFd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) return common::make_error(Errc::kInternal, fmt::format("cannot open {}", path), errno);
  std::string options = fmt::format("mode={:o}", mode & 07777);
  if (size_bytes > 0) options += fmt::format(",size={}", size_bytes);
  if (in_memory(dir.get())) {
    // A tmpfs mounted right here (by an earlier start) takes today's size; a dir inside a bigger
    // tmpfs (systemd's /run) keeps the size of that one.
    if (size_bytes > 0 && own_mount(path, dir.get()) &&
        ::mount(nullptr, path.c_str(), nullptr, MS_REMOUNT | MS_NOSUID | MS_NODEV | MS_NOEXEC, options.c_str()) != 0)
      return common::make_error(Errc::kInternal, fmt::format("cannot set the size of the tmpfs on {}", path), errno);
    return MemoryDir::kAlready;
  }
  if (!empty_dir(dir.get())) return MemoryDir::kInUse;
  if (::mount("tmpfs", path.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, options.c_str()) != 0)
    return common::make_error(Errc::kInternal, fmt::format("cannot mount a tmpfs on {}", path), errno);
  return MemoryDir::kMounted;
}

}  // namespace cellgate::launcher
