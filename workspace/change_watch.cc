// SPDX-License-Identifier: BSD-3-Clause
// change_watch: whether a directory tree may have changed since it was last walked, from inotify(7).
#include "workspace/change_watch.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace cellgate::workspace {

namespace {

// Everything that changes what a stat walk of the tree would find. Watches are added through
// /proc/self/fd/N of a directory opened O_NOFOLLOW (so no IN_DONT_FOLLOW, which would stop at that
// magic link); IN_ONLYDIR checks what it resolved to.
constexpr uint32_t kMask = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_DELETE_SELF |
                           IN_MOVE_SELF | IN_MOVED_FROM | IN_MOVED_TO | IN_ONLYDIR;
constexpr int kMaxDepth = 64;

}  // namespace

ChangeWatch::ChangeWatch(std::chrono::milliseconds max_age, size_t max_dirs_per_tree, size_t max_dirs_total)
    : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)), max_age_(max_age), max_dirs_(max_dirs_per_tree),
      max_total_(max_dirs_total) {
  if (max_total_ == 0) {
    max_total_ = 4096;  // if the limit cannot be read: a modest share
    if (FILE* f = std::fopen("/proc/sys/fs/inotify/max_user_watches", "re")) {
      unsigned long limit = 0;
      if (std::fscanf(f, "%lu", &limit) == 1 && limit >= 2) max_total_ = limit / 2;
      std::fclose(f);
    }
  }
}

bool ChangeWatch::maybe_changed(const std::string& root) {
  std::optional<std::string> head;
  return maybe_changed(root, head);
}

bool ChangeWatch::maybe_changed(const std::string& root, std::optional<std::string>& head) {
  head.reset();
  std::lock_guard lock(mu_);
  if (!fd_) return true;
  drain_locked();
  auto it = trees_.find(root);
  if (it == trees_.end()) return true;
  const Tree& t = it->second;
  if (t.dirty || !t.complete || t.walking > 0 || std::chrono::steady_clock::now() - t.walked >= max_age_) return true;
  head = t.head;
  return false;
}

uint64_t ChangeWatch::watch_head(const std::string& root) {
  std::lock_guard lock(mu_);
  if (!fd_) return 0;
  drain_locked();
  Tree& t = trees_[root];
  if (!t.head_watched) {
    const std::string parent = root.substr(0, root.find_last_of('/'));
    int dfd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd >= 0) {
      // Root's parent (the workspace directory), with the trees' mask: its head file is replaced by
      // rename, and the tree or the whole workspace may be removed or renamed away.
      int wd = ::inotify_add_watch(fd_.get(), fmt::format("/proc/self/fd/{}", dfd).c_str(), kMask);
      ::close(dfd);
      if (wd >= 0 && !dirs_.count(wd)) {
        dirs_.emplace(wd, Dir{parent, root, true});
        t.head_watched = true;
      }
    }
  }
  return t.head_events;
}

void ChangeWatch::remember_head(const std::string& root, uint64_t token, std::string head) {
  std::lock_guard lock(mu_);
  if (!fd_) return;
  drain_locked();
  auto it = trees_.find(root);
  if (it != trees_.end() && it->second.head_watched && it->second.head_events == token)
    it->second.head = std::move(head);
}

void ChangeWatch::begin_walk(const std::string& root) {
  std::lock_guard lock(mu_);
  if (!fd_) return;
  drain_locked();
  Tree& t = trees_[root];
  t.dirty = false;
  t.walked = std::chrono::steady_clock::now();
  ++t.walking;
  if (!t.complete) {
    t.complete = true;  // cleared by watch_recursive_locked when anything is left unwatched
    watch_recursive_locked(root, root, 0);
  }
}

void ChangeWatch::end_walk(const std::string& root) {
  std::lock_guard lock(mu_);
  if (auto it = trees_.find(root); it != trees_.end() && it->second.walking > 0) --it->second.walking;
}

void ChangeWatch::invalidate(const std::string& root) {
  std::lock_guard lock(mu_);
  if (auto it = trees_.find(root); it != trees_.end()) it->second.dirty = true;
}

void ChangeWatch::forget(const std::string& root) {
  std::lock_guard lock(mu_);
  for (auto it = dirs_.begin(); it != dirs_.end();) {
    if (it->second.root == root) {
      ::inotify_rm_watch(fd_.get(), it->first);
      it = dirs_.erase(it);
    } else {
      ++it;
    }
  }
  trees_.erase(root);
}

size_t ChangeWatch::watched_dirs(const std::string& root) {
  std::lock_guard lock(mu_);
  drain_locked();
  auto it = trees_.find(root);
  return it == trees_.end() ? 0 : it->second.dirs;
}

void ChangeWatch::drain_locked() {
  alignas(struct inotify_event) char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd_.get(), buf, sizeof buf);
    if (n <= 0) return;  // EAGAIN: nothing pending
    for (char* p = buf; p < buf + n;) {
      auto* ev = reinterpret_cast<struct inotify_event*>(p);
      p += sizeof(struct inotify_event) + ev->len;
      if (ev->mask & IN_Q_OVERFLOW) {  // events were lost: nothing is known any more
        for (auto& [root, t] : trees_) {
          t.dirty = true, t.complete = false;
          t.head.reset();
          ++t.head_events;
        }
        continue;
      }
      auto d = dirs_.find(ev->wd);
      if (d == dirs_.end()) continue;
      const std::string root = d->second.root;
      auto t = trees_.find(root);
      if (t == trees_.end()) continue;
      if (d->second.parent) {  // the head may have changed, not the tree
        t->second.head.reset();
        ++t->second.head_events;
        if (ev->mask & IN_IGNORED) {
          t->second.head_watched = false;
          dirs_.erase(d);
        }
        continue;
      }
      t->second.dirty = true;
      if (ev->mask & IN_IGNORED) {  // the directory is gone (or moved out and unwatched)
        if (d->second.path == root) t->second.complete = false;
        unwatch_locked(ev->wd);
        continue;
      }
      if ((ev->mask & IN_ISDIR) && (ev->mask & (IN_CREATE | IN_MOVED_TO)) && ev->len > 0)
        watch_recursive_locked(root, d->second.path + "/" + ev->name, 1);
    }
  }
}

// Watches dir and every directory below it, through /proc/self/fd of a directory opened O_NOFOLLOW.
// A symlink the kernel swaps in between events could at worst point a watch outside the tree: that
// only reports spurious changes (a walk), since a watch reads nothing, and is bounded by max_dirs.
void ChangeWatch::watch_recursive_locked(const std::string& root, const std::string& dir, int depth) {
  Tree& t = trees_[root];
  if (depth > kMaxDepth || t.dirs >= max_dirs_ || dirs_.size() >= max_total_) {
    t.complete = false;
    return;
  }
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) {
    if (depth == 0) t.complete = false;
    return;  // gone meanwhile: its parent's event already marked the tree dirty
  }
  int wd = ::inotify_add_watch(fd_.get(), fmt::format("/proc/self/fd/{}", dfd).c_str(), kMask);
  if (wd < 0) {  // ENOSPC: the user's watch limit (fs.inotify.max_user_watches)
    t.complete = false;
    ::close(dfd);
    return;
  }
  if (dirs_.emplace(wd, Dir{dir, root}).second) ++t.dirs;
  else dirs_[wd] = Dir{dir, root};  // the same directory, renamed within the tree
  DIR* d = ::fdopendir(dfd);
  if (!d) {
    ::close(dfd);
    t.complete = false;
    return;
  }
  std::vector<std::string> subdirs;
  while (struct dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    bool is_dir = e->d_type == DT_DIR;
    if (e->d_type == DT_UNKNOWN) {
      struct stat st{};
      is_dir = ::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
    }
    if (is_dir) subdirs.emplace_back(e->d_name);
  }
  ::closedir(d);
  for (const auto& name : subdirs) watch_recursive_locked(root, dir + "/" + name, depth + 1);
}

void ChangeWatch::unwatch_locked(int wd) {
  auto d = dirs_.find(wd);
  if (d == dirs_.end()) return;
  if (auto t = trees_.find(d->second.root); t != trees_.end() && t->second.dirs > 0) --t->second.dirs;
  dirs_.erase(d);
}

}  // namespace cellgate::workspace
