// SPDX-License-Identifier: BSD-3-Clause
// restorer: makes a live tree equal to a manifest by per-entry rename-into-place, never following symlinks.
#include "workspace/restorer.h"

#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <unordered_map>

#include <fmt/core.h>

#include "common/random.h"
#include "workspace/io_util.h"
#include "workspace/safe_path.h"
#include "workspace/sha256.h"
#include "workspace/sparse_file.h"

namespace cellgate::workspace {

using common::Errc;
using common::make_error;
using common::UniqueFd;

namespace {

// setuid/setgid bits are never recreated: the gateway (root) writes these files.
constexpr uint32_t kRestoreModeMask = 01777;

timespec from_ns(int64_t ns) {
  return timespec{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

common::Status copy_fd(int in, int out) {
  for (;;) {
    ssize_t n = ::copy_file_range(in, nullptr, out, nullptr, size_t{1} << 30, 0);
    if (n == 0) return common::ok();
    if (n > 0) continue;
    if (errno == EINTR) continue;
    if (errno != EXDEV && errno != EINVAL && errno != EOPNOTSUPP && errno != ENOSYS) {
      return errno_error("copy_file_range", errno);
    }
    break;  // fall back to read/write across filesystems
  }
  constexpr size_t kBuf = 1 << 20;
  auto buf = std::make_unique_for_overwrite<char[]>(kBuf);
  for (;;) {
    auto n = read_some(in, buf.get(), kBuf);
    if (!n) return n.error();
    if (*n == 0) return common::ok();
    if (auto st = write_all(out, buf.get(), *n); !st) return st;
  }
}

common::Status apply_meta_fd(int fd, const Entry& e, bool as_root) {
  if (as_root && ::fchown(fd, e.uid, e.gid) != 0) return errno_error("fchown " + e.path, errno);
  if (::fchmod(fd, e.mode & kRestoreModeMask) != 0) return errno_error("fchmod " + e.path, errno);
  timespec times[2] = {from_ns(e.mtime_ns), from_ns(e.mtime_ns)};
  if (::futimens(fd, times) != 0) return errno_error("futimens " + e.path, errno);
  return common::ok();
}

struct Applier {
  const ObjectStore& store;
  int root;
  bool as_root = ::geteuid() == 0;
  uint64_t files_written = 0;

  common::Status remove(const std::string& path) {
    auto parent = open_parent_beneath(root, path);
    if (!parent) return parent.error().code == Errc::kNotFound ? common::ok() : common::Status(parent.error());
    return remove_tree_at(parent->fd.get(), parent->name);
  }

  common::Status make_dir(const Entry& e) {
    auto parent = open_parent_beneath(root, e.path);
    if (!parent) return parent.error();
    if (::mkdirat(parent->fd.get(), parent->name.c_str(), 0700) != 0 && errno != EEXIST) {
      return errno_error("mkdir " + e.path, errno);
    }
    return common::ok();
  }

  // The new entry is built under a temp name in the same directory, then renamed over the old.
  common::Status write_entry(const Entry& e) {
    auto parent = open_parent_beneath(root, e.path);
    if (!parent) return parent.error();
    std::string temp = ".cellgate-restore-" + common::random_hex(8);
    int pfd = parent->fd.get();
    if (e.type == EntryType::kSymlink) {
      if (::symlinkat(e.link_target.c_str(), pfd, temp.c_str()) != 0) return errno_error("symlink " + e.path, errno);
      if (as_root) ::fchownat(pfd, temp.c_str(), e.uid, e.gid, AT_SYMLINK_NOFOLLOW);
      timespec times[2] = {from_ns(e.mtime_ns), from_ns(e.mtime_ns)};
      ::utimensat(pfd, temp.c_str(), times, AT_SYMLINK_NOFOLLOW);
    } else {
      auto obj = store.open_object(e.hash);
      if (!obj) return obj.error();
      UniqueFd out(::openat(pfd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
      if (!out) return errno_error("create " + e.path, errno);
      common::Status st = common::ok();
      if (e.sparse) {  // its extents at their offsets: the holes come back as holes
        auto layout = read_sparse_header(obj->get());
        st = layout ? write_sparse(obj->get(), *layout, out.get()) : common::Status(layout.error());
      } else {
        st = copy_fd(obj->get(), out.get());
      }
      if (st) st = apply_meta_fd(out.get(), e, as_root);
      if (!st) {
        ::unlinkat(pfd, temp.c_str(), 0);
        return st;
      }
      ++files_written;
    }
    if (::renameat(pfd, temp.c_str(), pfd, parent->name.c_str()) != 0) {
      int err = errno;
      ::unlinkat(pfd, temp.c_str(), 0);
      return errno_error("rename into place " + e.path, err);
    }
    return common::ok();
  }

  common::Status set_meta(const Entry& e) {
    int flags = e.type == EntryType::kDir ? O_RDONLY | O_DIRECTORY : O_RDONLY | O_NONBLOCK | O_NOCTTY;
    auto fd = open_beneath(root, e.path, flags);
    if (!fd) return fd.error();
    return apply_meta_fd(fd->get(), e, as_root);
  }
};

// Same bytes on disk (type, content or link target); metadata is compared separately.
bool same_data(const Entry& a, const Entry& b) {
  if (a.type != b.type) return false;
  if (a.type == EntryType::kFile) return !a.hash.empty() && a.hash == b.hash && a.size == b.size;
  return a.type != EntryType::kSymlink || a.link_target == b.link_target;
}

bool same_meta(const Entry& a, const Entry& b, bool as_root) {
  return (a.mode & kRestoreModeMask) == (b.mode & kRestoreModeMask) && a.mtime_ns == b.mtime_ns &&
         (!as_root || (a.uid == b.uid && a.gid == b.gid));
}

}  // namespace

common::Result<RestoreStats> restore_tree(const ObjectStore& store, int root_fd,
                                          const std::vector<Entry>& target, const StatIndex& index,
                                          uint64_t max_live_entries, const common::ProgressFn& progress) {
  std::unordered_map<std::string, const Entry*> wanted;
  for (const Entry& e : target) {
    if (e.type == EntryType::kFile && !store.contains(e.hash)) {
      return make_error(Errc::kInternal, fmt::format("snapshot object {} is missing", e.hash));
    }
    wanted.emplace(e.path, &e);
  }
  // Only a live file with the same size as its target can be equal: hash just those.
  constexpr size_t kBuf = 1 << 20;
  auto buf = std::make_unique_for_overwrite<char[]>(kBuf);
  HashFileFn hash_if_candidate = [&](int fd, const Entry& live) -> common::Result<FileHash> {
    auto it = wanted.find(live.path);
    if (it == wanted.end() || it->second->type != EntryType::kFile || it->second->size != live.size) {
      return FileHash{};
    }
    Sha256 h;
    uint64_t total = 0;
    if (it->second->sparse) {  // hashed the way it was stored, or rewritten when it is not sparse now
      struct stat st {};
      auto layout = ::fstat(fd, &st) == 0 ? sparse_layout(fd, st) : std::nullopt;
      if (!layout) return FileHash{};
      const std::string header = sparse_header(*layout);
      h.update(header.data(), header.size());
      auto read = read_extents(fd, *layout, [&](std::string_view chunk) {
        h.update(chunk.data(), chunk.size());
        return common::ok();
      });
      if (!read) return read.error();
      return FileHash{h.hex_digest(), layout->size, *read, true};
    }
    for (;;) {
      auto n = read_some(fd, buf.get(), kBuf);
      if (!n) return n.error();
      if (*n == 0) break;
      h.update(buf.get(), *n);
      total += *n;
    }
    return FileHash{h.hex_digest(), total, total, false};
  };
  ScanLimits limits;
  limits.max_files = max_live_entries;
  auto live = scan_tree(root_fd, index, limits, hash_if_candidate, [](const std::string&) { return true; });
  if (!live) return live.error();

  RestoreStats stats;
  stats.applied = diff_entries(live->entries, target);
  Applier ap{store, root_fd};
  std::unordered_map<std::string, const Entry*> current;
  for (const Entry& e : live->entries) current.emplace(e.path, &e);

  // Removals deepest first: whatever the target lacks, plus type changes and special files.
  std::vector<std::string> doomed = stats.applied.removed;
  for (const auto& p : live->skipped) doomed.push_back(p);
  for (const auto& p : stats.applied.changed) {
    const Entry* now = current[p];
    if (now->type != wanted[p]->type && (now->type == EntryType::kDir || wanted[p]->type == EntryType::kDir)) {
      doomed.push_back(p);
      current.erase(p);
    }
  }
  std::sort(doomed.rbegin(), doomed.rend());
  for (const auto& p : doomed) {
    if (auto st = ap.remove(p); !st) return st.error();
  }
  // Creations parent-first (bytewise order puts "a" before "a/…").
  uint64_t placed = 0, bytes_written = 0;
  for (const Entry& e : target) {
    if (progress) progress({"entries", ++placed, target.size(), bytes_written});
    auto it = current.find(e.path);
    const Entry* now = it == current.end() ? nullptr : it->second;
    common::Status st = common::ok();
    if (e.type == EntryType::kDir) {
      if (now == nullptr) st = ap.make_dir(e);
    } else if (now == nullptr || !same_data(*now, e)) {
      st = ap.write_entry(e);
      if (e.type == EntryType::kFile) bytes_written += e.size;
    } else if (e.type == EntryType::kFile && !same_meta(*now, e, ap.as_root)) {
      st = ap.set_meta(e);
    }
    if (!st) return st.error();
  }
  // Directory metadata last and deepest first, so later changes inside do not bump mtimes.
  for (auto it = target.rbegin(); it != target.rend(); ++it) {
    if (it->type != EntryType::kDir) continue;
    if (auto st = ap.set_meta(*it); !st) return st.error();
  }
  stats.files_written = ap.files_written;
  for (const Entry& e : target) {
    auto it = current.find(e.path);
    auto cached = live->index.find(e.path);
    if (it != current.end() && cached != live->index.end() && same_data(*it->second, e) &&
        same_meta(*it->second, e, ap.as_root)) {
      stats.index.emplace(e.path, cached->second);
    }
  }
  return stats;
}

}  // namespace cellgate::workspace
