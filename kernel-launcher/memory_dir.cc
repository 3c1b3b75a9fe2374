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

common::Result<MemoryDir> ensure_memory_dir(const std::string& path, mode_t mode) {
  using common::Errc;
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return common::make_error(Errc::kInternal, fmt::format("cannot make {}: {}", path, ec.message()));
  common::UniqueFd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) return common::make_error(Errc::kInternal, fmt::format("cannot open {}", path), errno);
  if (in_memory(dir.get())) return MemoryDir::kAlready;
  if (!empty_dir(dir.get())) return MemoryDir::kInUse;
  const std::string options = fmt::format("mode={:o}", mode & 07777);
  if (::mount("tmpfs", path.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, options.c_str()) != 0)
    return common::make_error(Errc::kInternal, fmt::format("cannot mount a tmpfs on {}", path), errno);
  return MemoryDir::kMounted;
}

}  // namespace cellgate::launcher
