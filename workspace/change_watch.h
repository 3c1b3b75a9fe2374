// SPDX-License-Identifier: BSD-3-Clause
// change_watch: whether a directory tree may have changed since it was last walked, from inotify(7),
// so that an execute which touched no file does not cost a stat walk of its workspace.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "common/unique_fd.h"

namespace cellgate::workspace {

// One inotify instance for any number of trees (the default limit is 128 instances per user, far
// fewer than kernels). Conservative: whenever it cannot know (no inotify, watch limit, queue
// overflow, a tree it has not walked yet), a tree reads as changed. Thread-safe.
//
// What inotify cannot see, and is therefore bounded by max_age instead: writes through a shared
// writable mmap(2) of a file opened in an earlier walk's lifetime ("IN_MODIFY is not generated for
// mmap writes", inotify(7) BUGS). A tree is also reported changed once it was last walked max_age ago.
class ChangeWatch {
 public:
  // max_dirs_total 0: half of fs.inotify.max_user_watches, which the host's other watchers share.
  explicit ChangeWatch(std::chrono::milliseconds max_age = std::chrono::seconds(2),
                       size_t max_dirs_per_tree = 4096, size_t max_dirs_total = 0);
  ChangeWatch(const ChangeWatch&) = delete;
  ChangeWatch& operator=(const ChangeWatch&) = delete;

  // False only if root was walked (begin_walk) less than max_age ago, nothing under it has changed
  // since, and no walk of it is in progress (whose snapshot is not the head yet).
  bool maybe_changed(const std::string& root);
  // As maybe_changed(root); when that is false, head is what remember_head last recorded for root if
  // nothing in root's parent directory (the workspace: its head file, the tree itself) changed since,
  // else nullopt. Costs what maybe_changed does (one inotify read), no other syscall.
  bool maybe_changed(const std::string& root, std::optional<std::string>& head);
  // Call before reading the head file: watches root's parent directory (once). The token is for
  // remember_head, which records a head only if that directory saw no change after this call.
  uint64_t watch_head(const std::string& root);
  void remember_head(const std::string& root, uint64_t token, std::string head);
  // Call right before walking root: clears its flag and watches every directory under it (the first
  // time, or after inotify lost track). Changes made during the walk set the flag again.
  void begin_walk(const std::string& root);
  // Call when that walk is over (its snapshot published, or failed: then invalidate first).
  void end_walk(const std::string& root);
  // The walk failed (the tree is not what the head snapshot says): walk again next time.
  void invalidate(const std::string& root);
  // Stops watching root (its kernel is gone).
  void forget(const std::string& root);
  // Directories watched under root (tests).
  size_t watched_dirs(const std::string& root);

 private:
  struct Tree {
    bool dirty = true;
    bool complete = false;  // every directory under it is watched
    int walking = 0;        // walks begun and not ended
    std::chrono::steady_clock::time_point walked{};
    size_t dirs = 0;
    bool head_watched = false;       // root's parent directory is watched
    uint64_t head_events = 0;        // events seen in it
    std::optional<std::string> head;  // remembered; reset by any such event
  };
  struct Dir {
    std::string path;
    std::string root;
    bool parent = false;  // root's parent directory, watched for the head only
  };
  void drain_locked();
  void watch_recursive_locked(const std::string& root, const std::string& dir, int depth);
  void unwatch_locked(int wd);

  std::mutex mu_;
  common::UniqueFd fd_;
  std::chrono::milliseconds max_age_;
  size_t max_dirs_;
  size_t max_total_;
  std::unordered_map<std::string, Tree> trees_;
  std::unordered_map<int, Dir> dirs_;
};

}  // namespace cellgate::workspace
