// SPDX-License-Identifier: BSD-3-Clause
// workspace_manager: named per-owner workspaces under the gateway's data dir (create, open, fork, delete).
#include "workspace/workspace_manager.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <fmt/core.h>

#include "common/log.h"
#include "common/random.h"
#include "workspace/io_util.h"
#include "workspace/layout.h"
#include "workspace/published_manifests.h"
#include "workspace/safe_path.h"

namespace cellgate::workspace {

using common::Errc;
using common::make_error;

namespace {

common::Status make_dir(const std::string& path, mode_t mode) {
  if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST) return errno_error("mkdir " + path, errno);
  return common::ok();
}

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

common::Result<std::unique_ptr<WorkspaceManager>> WorkspaceManager::open(std::string data_dir,
                                                                         WorkspaceConfig config) {
  if (auto st = make_dir(data_dir, 0711); !st) return st.error();
  std::unique_ptr<Volume> volume;
  // A volume made before holds the workspaces: it is mounted whatever the mode (kOff only makes none).
  const bool have_image = ::access(Volume::image_path(data_dir).c_str(), F_OK) == 0;
  // kAuto as root is kOn: a volume that cannot be made fails the open, never falls back to plain
  // directories unnoticed (they lose the live quota, and a jail's /proc/self/mountinfo would show the
  // host path of its tree). Running without one is the operator's explicit kOff.
  if (have_image || config.volume == VolumeMode::kOn || (config.volume == VolumeMode::kAuto && ::geteuid() == 0)) {
    auto v = Volume::open(data_dir, config.volume_bytes);
    if (!v) {
      auto e = v.error();
      if (!have_image)
        e.message += " (--workspace-volume off runs without one: no live quota, and jails see their workspace's host path)";
      return e;
    }
    volume = std::move(v.value());
  }
  for (const auto& d : {workspaces_dir(data_dir), data_tmp_dir(data_dir)}) {
    if (auto st = make_dir(d, 0711); !st) return st.error();
  }
  auto store = ObjectStore::open(config.store_dir.empty() ? store_dir(data_dir) : config.store_dir);
  if (!store) return store.error();
  std::unique_ptr<WorkspaceManager> mgr(
      new WorkspaceManager(std::move(data_dir), config, std::move(store.value()), std::move(volume)));
  // Pins made before this data dir was given a shared store: a gc on another node must see them.
  if (auto moved = move_local_pins(mgr->data_dir_, mgr->pins_); !moved) {
    auto e = moved.error();
    e.message = "moving the pins of " + mgr->data_dir_ + " to " + mgr->pins_.path + ": " + e.message;
    return e;
  } else if (*moved != 0) {
    common::log_info("moved={} to={} msg=\"pins moved beside the shared store\"", *moved, mgr->pins_.path);
  }
  if (mgr->volume_) {
    if (auto st = make_dir(mgr->staging_dir(), 0700); !st) return st.error();
  }
  // Leftovers of creations or removals interrupted by a crash.
  for (const auto& dir : {data_tmp_dir(mgr->data_dir_), mgr->staging_dir()}) {
    auto names = list_dir_at(AT_FDCWD, dir);
    if (!names) continue;
    for (const auto& n : *names) (void)mgr->discard(dir + "/" + n);
  }
  return mgr;
}

std::string WorkspaceManager::staging_dir() const {
  return volume_ ? workspaces_dir(data_dir_) + "/+tmp" : data_tmp_dir(data_dir_);
}

common::Status WorkspaceManager::discard(const std::string& staged) const {
  if (volume_) {
    // A whole tree goes in one ioctl, however many files it holds.
    common::UniqueFd dir(::open(staged.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (dir) (void)volume_->remove_tree(dir.get(), "tree");
  }
  return remove_tree_at(AT_FDCWD, staged);
}

common::Result<btrfs::Usage> WorkspaceManager::quota(const WorkspaceRef& ref) const {
  if (!volume_) return make_error(Errc::kUnavailable, "workspaces have no live quota here");
  auto dir = checked_dir(ref);
  if (!dir) return dir.error();
  return volume_->usage(*dir + "/tree");
}

common::Result<btrfs::Usage> WorkspaceManager::owner_quota(const std::string& owner) const {
  if (!volume_) return make_error(Errc::kUnavailable, "workspaces have no live quota here");
  if (auto st = validate_name(owner); !st) return st.error();
  const std::string owner_dir = workspaces_dir(data_dir_) + "/" + owner;
  common::UniqueFd fd(::open(owner_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return errno_error("open " + owner_dir, errno);
  return volume_->group_usage(fd.get());
}

common::Status WorkspaceManager::group(const std::string& owner_dir, const std::string& tree) const {
  common::UniqueFd owner_fd(::open(owner_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!owner_fd) return errno_error("open " + owner_dir, errno);
  common::UniqueFd tree_fd(::open(tree.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!tree_fd) return errno_error("open " + tree, errno);
  return volume_->group_tree(tree_fd.get(), owner_fd.get(), config_.owner_max_bytes);
}

common::Result<std::string> WorkspaceManager::checked_dir(const WorkspaceRef& ref) const {
  if (auto st = validate_name(ref.owner); !st) return st.error();
  if (auto st = validate_name(ref.name); !st) return st.error();
  return workspace_dir(data_dir_, ref.owner, ref.name);
}

common::Result<Workspace> WorkspaceManager::create(const WorkspaceRef& ref) {
  auto dir = checked_dir(ref);
  if (!dir) return dir.error();
  std::string owner_dir = workspaces_dir(data_dir_) + "/" + ref.owner;
  if (auto st = make_dir(owner_dir, 0711); !st) return st.error();
  std::string staged = staging_dir() + "/ws-" + common::random_hex(8);
  for (const auto& d : {staged, staged + "/snapshots"}) {
    if (auto st = make_dir(d, 0700); !st) return st.error();
  }
  // The tree is the kernel's /workspace: it belongs to the kernel's uid, not to the gateway.
  std::string tree = staged + "/tree";
  if (volume_) {
    common::UniqueFd staged_fd(::open(staged.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    auto st = staged_fd ? volume_->make_tree(staged_fd.get(), "tree", quota_of(ref), config_.tree_uid, config_.tree_gid)
                        : common::Status(errno_error("open " + staged, errno));
    // In its owner's group before anything can write into it.
    if (st) st = group(owner_dir, tree);
    if (!st) {
      (void)discard(staged);
      return st.error();
    }
  } else {
    if (auto st = make_dir(tree, 0755); !st) return st.error();
    if ((config_.tree_uid >= 0 || config_.tree_gid >= 0) &&
        ::chown(tree.c_str(), static_cast<uid_t>(config_.tree_uid), static_cast<gid_t>(config_.tree_gid)) != 0) {
      (void)remove_tree_at(AT_FDCWD, staged);
      return errno_error("chown workspace tree", errno);
    }
  }
  // The workspace dir itself must let the kernel's uid reach tree/ (the bind-mount source).
  ::chmod(staged.c_str(), 0711);
  if (::renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, dir->c_str(), RENAME_NOREPLACE) != 0) {
    int err = errno;
    (void)discard(staged);
    if (err == EEXIST || err == ENOTEMPTY) return make_error(Errc::kConflict, "workspace already exists");
    return errno_error("publish workspace", err);
  }
  return Workspace(store_, *dir, config_for(ref));
}

common::Result<Workspace> WorkspaceManager::open(const WorkspaceRef& ref) {
  auto dir = checked_dir(ref);
  if (!dir) return dir.error();
  if (!is_dir(*dir + "/tree")) return make_error(Errc::kNotFound, "no such workspace");
  return Workspace(store_, *dir, config_for(ref));
}

common::Result<std::string> WorkspaceManager::tree_path(const WorkspaceRef& ref) const {
  auto dir = checked_dir(ref);
  if (!dir) return dir.error();
  return *dir + "/tree";
}

common::Result<Workspace> WorkspaceManager::ensure(const WorkspaceRef& ref) {
  // Every kernel start ensures its workspace and nearly always finds it: look before staging a new
  // one (staging and removing it again costs several ms of directory syscalls on a busy disk).
  if (auto found = open(ref); found || found.error().code != Errc::kNotFound) {
    // The owner's quota may have changed since (cellgate user set-limits): one ioctl. The owner's
    // group (a tree made before there were groups joins it here; its limit follows the config's).
    if (found && volume_ && ref.max_bytes != 0) {
      if (auto st = volume_->set_limit(found->tree_path(), ref.max_bytes); !st) return st.error();
    }
    if (found && volume_) {
      if (auto st = group(workspaces_dir(data_dir_) + "/" + ref.owner, found->tree_path()); !st) return st.error();
    }
    return found;
  }
  auto ws = create(ref);
  if (ws || ws.error().code != Errc::kConflict) return ws;
  return open(ref);
}

common::Status WorkspaceManager::remove(const WorkspaceRef& ref) {
  auto dir = checked_dir(ref);
  if (!dir) return dir.error();
  if (!is_dir(*dir)) return make_error(Errc::kNotFound, "no such workspace");
  auto lock = FileLock::acquire(*dir + "/lock", FileLock::Mode::kExclusive);
  if (!lock) return lock.error();
  // The shared store's copies first: no node may restore a workspace that is being deleted.
  if (!config_.store_dir.empty())
    if (auto st = PublishedManifests(config_.store_dir, ref.owner, ref.name).remove_all(); !st) return st;
  std::string doomed = staging_dir() + "/rm-" + common::random_hex(8);
  if (::rename(dir->c_str(), doomed.c_str()) != 0) return errno_error("remove workspace", errno);
  return discard(doomed);
}

namespace {
// The valid names among dir's entries, sorted; none when dir does not exist.
common::Result<std::vector<std::string>> valid_names_in(const std::string& dir) {
  auto names = list_dir_at(AT_FDCWD, dir);
  if (!names) {
    if (names.error().code == Errc::kNotFound) return std::vector<std::string>{};
    return names.error();
  }
  std::vector<std::string> out;
  for (auto& n : *names) {
    if (validate_name(n)) out.push_back(std::move(n));
  }
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

common::Result<std::vector<std::string>> WorkspaceManager::list(const std::string& owner) const {
  if (auto st = validate_name(owner); !st) return st.error();
  return valid_names_in(workspaces_dir(data_dir_) + "/" + owner);
}

common::Result<std::vector<std::string>> WorkspaceManager::owners() const {
  return valid_names_in(workspaces_dir(data_dir_));
}

common::Result<Workspace> WorkspaceManager::fork(const WorkspaceRef& from, const std::string& id,
                                                 const WorkspaceRef& to) {
  auto src = open(from);
  if (!src) return src.error();
  auto manifest = src->load_snapshot(id);
  if (!manifest) return manifest.error();
  auto dst = create(to);
  if (!dst) return dst.error();
  auto restored = dst->adopt(*manifest);
  if (!restored) {
    (void)remove(to);
    return restored.error();
  }
  return dst;
}

}  // namespace cellgate::workspace
