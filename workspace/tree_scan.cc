// SPDX-License-Identifier: BSD-3-Clause
// tree_scan: a no-follow walk of a live workspace with a git-index-style stat cache.
#include "workspace/tree_scan.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>

#include <fmt/core.h>

#include "common/unique_fd.h"
#include "workspace/io_util.h"
#include "workspace/safe_path.h"
#include "workspace/sha256.h"

namespace cellgate::workspace {

using common::Errc;
using common::make_error;
using common::UniqueFd;

namespace {

constexpr std::string_view kIndexMagic = "cellgate-index 1\n";
// Timestamps come from a coarse clock (one tick = up to 4 ms at HZ=250). A file whose ctime is
// this close to the scan start could change again within the same tick without its key
// changing ("racy git"), so it is not cached and will be re-hashed next time.
constexpr int64_t kRacyMarginNs = 50'000'000;

int64_t to_ns(const timespec& ts) { return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec; }

StatKey key_of(const struct stat& st) {
  return StatKey{static_cast<uint64_t>(st.st_size), to_ns(st.st_mtim), to_ns(st.st_ctim),
                 static_cast<uint64_t>(st.st_ino)};
}

struct Walker {
  const StatIndex& previous;
  const ScanLimits& limits;
  const HashFileFn& hash_file;
  const ReuseFn& can_reuse;
  int64_t racy_after_ns = 0;
  uint64_t total_bytes = 0;
  uint64_t total_entries = 0;
  ScanResult out;

  Entry base_entry(std::string path, EntryType type, const struct stat& st) {
    Entry e;
    e.path = std::move(path);
    e.type = type;
    e.mode = st.st_mode & 07777;
    e.uid = st.st_uid;
    e.gid = st.st_gid;
    e.mtime_ns = to_ns(st.st_mtim);
    return e;
  }

  // Unchanged files (the common case) cost one fstatat and no open.
  bool add_cached(std::string& path, const struct stat& st) {
    auto it = previous.find(path);
    if (it == previous.end() || !(it->second.key == key_of(st)) || it->second.key.ctime_ns >= racy_after_ns ||
        !can_reuse(it->second.hash)) {
      return false;
    }
    Entry e = base_entry(std::move(path), EntryType::kFile, st);
    e.size = it->second.key.size;
    e.hash = it->second.hash;
    e.sparse = it->second.sparse;
    ++out.files_reused;
    out.index.emplace(e.path, it->second);
    out.entries.push_back(std::move(e));
    return true;
  }

  common::Status add_file(int dirfd, const std::string& name, std::string path) {
    UniqueFd fd(::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    if (!fd) {
      if (errno == ENOENT) return common::ok();
      if (errno == ELOOP || errno == ENXIO) {  // swapped for a symlink or socket mid-walk
        out.skipped.push_back(std::move(path));
        return common::ok();
      }
      return errno_error("open " + path, errno);
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return errno_error("fstat " + path, errno);
    if (!S_ISREG(st.st_mode)) {  // replaced by a FIFO or device between fstatat and open
      out.skipped.push_back(std::move(path));
      return common::ok();
    }
    StatKey key = key_of(st);
    Entry e = base_entry(std::move(path), EntryType::kFile, st);
    e.size = key.size;
    auto it = previous.find(e.path);
    if (it != previous.end() && it->second.key == key && can_reuse(it->second.hash)) {
      e.hash = it->second.hash;
      e.sparse = it->second.sparse;
      ++out.files_reused;
    } else {
      auto h = hash_file(fd.get(), e);
      if (!h) return h.error();
      if (!h->hash.empty()) {
        e.hash = std::move(h->hash);
        e.size = h->size;
        e.sparse = h->sparse;
        ++out.files_hashed;
        out.bytes_hashed += h->bytes_read;
      }
    }
    if (!e.hash.empty() && key.ctime_ns < racy_after_ns && e.size == key.size) {
      out.index.emplace(e.path, IndexEntry{key, e.hash, e.sparse});
    }
    out.entries.push_back(std::move(e));
    return common::ok();
  }

  common::Error too_many() const {
    return make_error(Errc::kTooLarge, fmt::format("workspace has more than {} entries", limits.max_files));
  }

  common::Status walk(int dirfd, const std::string& prefix, int depth) {
    uint64_t budget = limits.max_files - std::min(limits.max_files, total_entries);
    auto names = list_dir_at(dirfd, "", static_cast<size_t>(std::min<uint64_t>(budget, SIZE_MAX - 1)) + 1);
    if (!names) {
      if (names.error().code == Errc::kTooLarge) return too_many();
      return names.error();
    }
    std::sort(names->begin(), names->end());
    for (const std::string& name : *names) {
      std::string path = prefix.empty() ? name : prefix + "/" + name;
      if (++total_entries > limits.max_files) return too_many();
      if (std::chrono::steady_clock::now() > limits.deadline) {
        return make_error(Errc::kTimeout, "workspace scan exceeded its time budget");
      }
      if (path.size() > kMaxPathBytes) {
        out.skipped.push_back(std::move(path));
        continue;
      }
      struct stat st {};
      if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) continue;
        return errno_error("stat " + path, errno);
      }
      if (S_ISREG(st.st_mode)) {
        // What the file holds: a sparse file's holes cost nothing (it is stored as its extents).
        total_bytes += std::min(static_cast<uint64_t>(st.st_size), static_cast<uint64_t>(st.st_blocks) * 512);
        if (total_bytes > limits.max_bytes) {
          return make_error(Errc::kTooLarge, fmt::format("workspace exceeds {} bytes", limits.max_bytes));
        }
        if (add_cached(path, st)) continue;
        if (auto s = add_file(dirfd, name, std::move(path)); !s) return s;
      } else if (S_ISLNK(st.st_mode)) {
        std::string target(kMaxPathBytes + 1, '\0');
        ssize_t n = ::readlinkat(dirfd, name.c_str(), target.data(), target.size());
        if (n < 0) {
          if (errno == ENOENT || errno == EINVAL) continue;
          return errno_error("readlink " + path, errno);
        }
        target.resize(static_cast<size_t>(n));
        Entry e = base_entry(std::move(path), EntryType::kSymlink, st);
        e.link_target = std::move(target);
        out.entries.push_back(std::move(e));
      } else if (S_ISDIR(st.st_mode)) {
        if (depth >= limits.max_depth) {
          out.skipped.push_back(std::move(path));
          continue;
        }
        UniqueFd sub(::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!sub) {
          if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR) continue;
          return errno_error("open dir " + path, errno);
        }
        out.entries.push_back(base_entry(path, EntryType::kDir, st));
        if (auto s = walk(sub.get(), path, depth + 1); !s) return s;
      } else {
        out.skipped.push_back(std::move(path));  // FIFO, socket, device: never opened
      }
    }
    return common::ok();
  }
};

template <typename T>
bool parse_num(std::string_view s, T& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

std::string serialize_index(const StatIndex& index) {
  std::string out(kIndexMagic);
  std::vector<const std::pair<const std::string, IndexEntry>*> sorted;  // deterministic text
  sorted.reserve(index.size());
  for (const auto& kv : index) sorted.push_back(&kv);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->first < b->first; });
  for (const auto* kv : sorted) {
    const auto& [path, ie] = *kv;
    // A sparse object's hash is marked "s:" (an index of an older version has none: plain files).
    out += fmt::format("{} {} {} {} {}{} {}\n", ie.key.size, ie.key.mtime_ns, ie.key.ctime_ns, ie.key.ino,
                       ie.sparse ? "s:" : "", ie.hash, escape_field(path));
  }
  return out;
}

common::Result<StatIndex> parse_index(std::string_view text) {
  if (text.substr(0, kIndexMagic.size()) != kIndexMagic) return make_error(Errc::kBadRequest, "bad index");
  StatIndex index;
  size_t start = kIndexMagic.size();
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) return make_error(Errc::kBadRequest, "bad index line");
    std::string_view line = text.substr(start, nl - start);
    start = nl + 1;
    std::string_view f[6];
    size_t pos = 0;
    for (int i = 0; i < 6; ++i) {
      size_t sp = i == 5 ? line.size() : line.find(' ', pos);
      if (sp == std::string_view::npos) return make_error(Errc::kBadRequest, "bad index line");
      f[i] = line.substr(pos, sp - pos);
      pos = sp + 1;
    }
    IndexEntry ie;
    if (f[4].starts_with("s:")) {
      ie.sparse = true;
      f[4].remove_prefix(2);
    }
    auto path = unescape_field(f[5]);
    if (!path || !parse_num(f[0], ie.key.size) || !parse_num(f[1], ie.key.mtime_ns) ||
        !parse_num(f[2], ie.key.ctime_ns) || !parse_num(f[3], ie.key.ino) || !is_sha256_hex(f[4])) {
      return make_error(Errc::kBadRequest, "bad index entry");
    }
    ie.hash = std::string(f[4]);
    index.emplace(std::move(path.value()), std::move(ie));
  }
  return index;
}

common::Result<ScanResult> scan_tree(int root_fd, const StatIndex& previous, const ScanLimits& limits,
                                     const HashFileFn& hash_file, const ReuseFn& can_reuse) {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  Walker w{previous, limits, hash_file, can_reuse, 0, 0, 0, {}};
  w.racy_after_ns = to_ns(now) - kRacyMarginNs;
  if (auto s = w.walk(root_fd, "", 0); !s) return s.error();
  // Depth-first order with per-directory sorting is not bytewise order ("a/b" vs "a.b"); the
  // manifest and diffs need the latter.
  std::sort(w.out.entries.begin(), w.out.entries.end(),
            [](const Entry& a, const Entry& b) { return a.path < b.path; });
  return std::move(w.out);
}

}  // namespace cellgate::workspace
