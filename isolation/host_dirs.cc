// SPDX-License-Identifier: BSD-3-Clause
// host_dirs: opening and handing over the host dirs a jail binds read-write (workspace, ipc dir).
#include "isolation/host_dirs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

namespace cellgate::isolation {

common::UniqueFd open_dir_no_symlinks(const std::string& path) {
  open_how how{};
  how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  common::UniqueFd fd(static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof how)));
  if (fd || errno != ENOSYS) return fd;
  fd.reset(::open(path.starts_with('/') ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  size_t pos = 0;
  while (fd && pos < path.size()) {
    size_t end = path.find('/', pos);
    if (end == std::string::npos) end = path.size();
    std::string part = path.substr(pos, end - pos);
    pos = end + 1;
    if (part.empty() || part == ".") continue;
    fd.reset(::openat(fd.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd && errno == ENOTDIR) errno = ELOOP;  // O_NOFOLLOW|O_DIRECTORY on a symlink gives ENOTDIR
  }
  return fd;
}

bool may_hand_over(int dir_fd, bool entries) {
  struct stat st {};
  if (::fstat(dir_fd, &st) < 0 || (st.st_mode & S_IWOTH) != 0) return false;
  if (entries) return true;  // bind-same ipc dirs hold the launcher's connection file
  int dup = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
  DIR* d = dup >= 0 ? ::fdopendir(dup) : nullptr;
  if (d == nullptr) {
    if (dup >= 0) ::close(dup);
    return false;
  }
  bool empty = true;
  while (dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      empty = false;
      break;
    }
  }
  ::closedir(d);
  return empty;
}

void chown_tree_top(int dir_fd, bool entries, std::initializer_list<uid_t> from, uid_t owner) {
  auto wanted = [&](uid_t uid) {
    for (uid_t f : from) if (f == uid) return true;
    return false;
  };
  struct stat st {};
  if (::fstat(dir_fd, &st) == 0 && wanted(st.st_uid)) (void)::fchown(dir_fd, owner, owner);
  if (!entries) return;
  int dup = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
  DIR* d = dup >= 0 ? ::fdopendir(dup) : nullptr;
  if (d == nullptr) {
    if (dup >= 0) ::close(dup);
    return;
  }
  int count = 0;
  while (dirent* e = ::readdir(d)) {
    if (++count > 4096) break;  // bound: an ipc dir holds a handful of files
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    if (::fstatat(dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) && wanted(st.st_uid))
      (void)::fchownat(dir_fd, e->d_name, owner, owner, AT_SYMLINK_NOFOLLOW);
  }
  ::closedir(d);
}

}  // namespace cellgate::isolation
