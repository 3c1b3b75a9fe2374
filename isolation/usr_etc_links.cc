// SPDX-License-Identifier: BSD-3-Clause
// usr_etc_links: the /etc entries that symlinks under /usr lead to, which the jail binds so that
// the /usr it shows is whole.
#include "isolation/usr_etc_links.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "common/unique_fd.h"
#include "isolation/etc_secrets.h"
#include "isolation/mount_plan.h"

namespace cellgate::isolation {
namespace {

constexpr int kMaxDepth = 64;
constexpr size_t kMaxCacheBytes = 1 << 20;
constexpr size_t kMaxEntries = 2'000'000;
// Bump the number whenever scan_usr_links() changes what it collects: an older list is then scanned again.
constexpr const char* kCacheHeader = "cellgate usr-etc-links 1";

// `target` read from a link in `dir`, made absolute and normalised lexically ("a/../b" -> "b").
std::string normalise(const std::string& dir, const std::string& target) {
  std::vector<std::string> parts;
  std::string whole = target.starts_with('/') ? target : dir + "/" + target;
  size_t pos = 0;
  while (pos <= whole.size()) {
    size_t slash = whole.find('/', pos);
    std::string part = whole.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(std::move(part));
    }
    if (slash == std::string::npos) break;
    pos = slash + 1;
  }
  std::string out;
  for (const auto& p : parts) out += "/" + p;
  return out.empty() ? "/" : out;
}

struct Walk {
  size_t max_entries = 0;
  size_t visited = 0;
  bool truncated = false;
  std::set<std::string> targets;

  void dir(int fd, const std::string& path, int depth) {
    struct stat st {};
    // Only root's tree, which nobody else may change, vouches for its links.
    if (::fstat(fd, &st) < 0 || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) return;
    DIR* d = ::fdopendir(::dup(fd));
    if (d == nullptr) return;
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      if (++visited > max_entries) {
        truncated = true;
        break;
      }
      unsigned char type = e->d_type;
      if (type == DT_UNKNOWN) {
        struct stat est {};
        if (::fstatat(fd, name.c_str(), &est, AT_SYMLINK_NOFOLLOW) < 0) continue;
        type = S_ISLNK(est.st_mode) ? DT_LNK : S_ISDIR(est.st_mode) ? DT_DIR : DT_REG;
      }
      if (type == DT_LNK) {
        char buf[4096];
        ssize_t n = ::readlinkat(fd, name.c_str(), buf, sizeof buf);
        if (n <= 0 || static_cast<size_t>(n) >= sizeof buf) continue;
        std::string to = normalise(path, std::string(buf, static_cast<size_t>(n)));
        if (to.starts_with("/etc/") && to.find('\n') == std::string::npos) targets.insert(std::move(to));
      } else if (type == DT_DIR && depth < kMaxDepth) {
        common::UniqueFd sub(::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (sub) dir(sub.get(), path + "/" + name, depth + 1);
      }
      if (truncated) break;
    }
    ::closedir(d);
  }
};

bool within(const std::string& inner, const std::string& outer) {
  return inner.starts_with(outer) && (inner.size() == outer.size() || inner[outer.size()] == '/');
}

std::string fingerprint() {
  std::string out = std::string(kCacheHeader) + "\n";
  for (const char* path : {"/usr", "/usr/local", "/var/lib/dpkg/status", "/var/lib/dpkg/alternatives"}) {
    struct stat st {};
    out += path;
    if (::stat(path, &st) == 0) {
      out += " " + std::to_string(st.st_dev) + " " + std::to_string(st.st_ino) + " " + std::to_string(st.st_size) + " " +
             std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
    } else {
      out += " -";
    }
    out += "\n";
  }
  return out + "\n";
}

// The cached list when the file is ours (not a link, not writable by others) and its fingerprint matches.
bool read_cache(const std::string& path, const std::string& expect, std::vector<std::string>& out) {
  common::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & (S_IWGRP | S_IWOTH)) != 0 || static_cast<size_t>(st.st_size) > kMaxCacheBytes)
    return false;
  std::string text(static_cast<size_t>(st.st_size), '\0');
  if (::pread(fd.get(), text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) return false;
  if (!text.starts_with(expect)) return false;
  size_t pos = expect.size();
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) return false;  // a torn file: scan again
    std::string line = text.substr(pos, nl - pos);
    if (!line.starts_with("/etc/")) return false;
    out.push_back(std::move(line));
    pos = nl + 1;
  }
  return true;
}

void write_cache(const std::string& dir, const std::string& path, const std::string& text) {
  if (::mkdir(dir.c_str(), 0700) < 0 && errno != EEXIST) return;
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  common::UniqueFd out(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (out && ::write(out.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size())) {
    out.reset();
    if (::rename(tmp.c_str(), path.c_str()) == 0) return;
  }
  ::unlink(tmp.c_str());
}

}  // namespace

UsrLinkScan scan_usr_links(const std::string& root, size_t max_entries) {
  Walk walk;
  walk.max_entries = max_entries;
  common::UniqueFd fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (fd) walk.dir(fd.get(), root == "/" ? "" : root, 0);
  return UsrLinkScan{{walk.targets.begin(), walk.targets.end()}, walk.truncated};
}

std::vector<std::string> etc_binds_for_links(const std::vector<std::string>& targets,
                                             const std::vector<std::string>& explicit_binds) {
  std::set<std::string> out;
  for (const auto& target : targets) {
    if (!target.starts_with("/etc/") || !overlapping_secret(target).empty() || is_generated_etc_file(target)) continue;
    std::string top = target.substr(0, target.find('/', 5));
    std::string bind = overlapping_secret(top).empty() && !is_generated_etc_file(top) ? top : target;
    bool covered = std::any_of(explicit_binds.begin(), explicit_binds.end(),
                               [&](const std::string& e) { return within(bind, e); });
    if (!covered) out.insert(std::move(bind));
  }
  return {out.begin(), out.end()};
}

std::vector<std::string> usr_etc_link_targets(const std::string& cache_dir) {
  const std::string path = cache_dir + "/usr-etc-links";
  const std::string key = fingerprint();
  std::vector<std::string> cached;
  if (read_cache(path, key, cached)) return cached;
  UsrLinkScan scan = scan_usr_links("/usr", kMaxEntries);
  std::string text = key;
  for (const auto& t : scan.targets) text += t + "\n";
  write_cache(cache_dir, path, text);
  return scan.targets;
}

}  // namespace cellgate::isolation
