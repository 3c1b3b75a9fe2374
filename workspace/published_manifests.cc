// SPDX-License-Identifier: BSD-3-Clause
// published_manifests: snapshot manifests in a store that cluster nodes share.
#include "workspace/published_manifests.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <utility>
#include <vector>

#include "common/log.h"
#include "common/unique_fd.h"
#include "workspace/io_util.h"
#include "workspace/layout.h"
#include "workspace/safe_path.h"

namespace cellgate::workspace {

using common::Errc;
using common::make_error;
using common::UniqueFd;

namespace {

constexpr uint64_t kMaxManifestBytes = uint64_t{1} << 30;  // as workspace.cc reads its own
constexpr size_t kMaxPublished = 100'000;                  // retention keeps far fewer per workspace
constexpr const char* kHeld = "held";

common::Status make_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) return errno_error("mkdir " + path, errno);
  return common::ok();
}

}  // namespace

PublishedManifests::PublishedManifests(std::string store_dir, std::string owner, std::string name)
    : root_(store_dir + "/manifests"), owner_(std::move(owner)), dir_(root_ + "/" + owner_ + "/" + name) {}

std::optional<PublishedManifests> PublishedManifests::for_workspace(const std::string& store_dir,
                                                                    const std::string& dir) {
  if (store_dir.empty()) return std::nullopt;
  const size_t name_at = dir.rfind('/');
  if (name_at == std::string::npos || name_at == 0) return std::nullopt;
  const size_t owner_at = dir.rfind('/', name_at - 1);
  if (owner_at == std::string::npos) return std::nullopt;
  std::string owner = dir.substr(owner_at + 1, name_at - owner_at - 1);
  std::string name = dir.substr(name_at + 1);
  if (!validate_name(owner) || !validate_name(name)) return std::nullopt;
  return PublishedManifests(store_dir, std::move(owner), std::move(name));
}

common::Status PublishedManifests::make_dirs() const {
  for (const auto& d : {root_, root_ + "/" + owner_, dir_}) {
    if (auto st = make_dir(d); !st) return st;
  }
  return common::ok();
}

common::Status PublishedManifests::publish(const std::string& id, const std::string& manifest_text, bool held) {
  if (!is_snapshot_id(id)) return make_error(Errc::kBadRequest, "not a snapshot id: " + id);
  if (auto st = make_dirs(); !st) return st;
  const std::string target = held ? dir_ + "/" + kHeld : dir_;
  if (held)
    if (auto st = make_dir(target); !st) return st;
  UniqueFd dir(::open(target.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) return errno_error("open " + target, errno);
  return write_file_atomic(dir.get(), id, manifest_text);
}

bool PublishedManifests::has(const std::string& id) const {
  if (!is_snapshot_id(id)) return false;
  struct stat st {};
  return ::stat((dir_ + "/" + id).c_str(), &st) == 0 || ::stat((dir_ + "/" + kHeld + "/" + id).c_str(), &st) == 0;
}

common::Status PublishedManifests::remove(const std::string& id) {
  if (!is_snapshot_id(id)) return make_error(Errc::kBadRequest, "not a snapshot id: " + id);
  for (const std::string& path : {dir_ + "/" + id, dir_ + "/" + kHeld + "/" + id})
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return errno_error("unlink " + path, errno);
  return common::ok();
}

common::Result<std::vector<std::string>> PublishedManifests::all_paths(const std::string& store_dir) {
  std::vector<std::string> out;
  const std::string root = store_dir + "/manifests";
  // The names in dir that pass keep; none when dir is gone (a workspace deleted meanwhile).
  auto names_in = [](const std::string& dir, auto keep) -> common::Result<std::vector<std::string>> {
    auto names = list_dir_at(AT_FDCWD, dir, kMaxPublished);
    if (!names && names.error().code == Errc::kNotFound) return std::vector<std::string>{};
    if (!names) return names.error();
    std::erase_if(*names, [&](const std::string& n) { return !keep(n); });
    return names;
  };
  auto is_name = [](const std::string& n) { return static_cast<bool>(validate_name(n)); };
  auto owners = names_in(root, is_name);
  if (!owners) return owners.error();
  for (const auto& owner : *owners) {
    auto workspaces = names_in(root + "/" + owner, is_name);
    if (!workspaces) return workspaces.error();
    for (const auto& ws : *workspaces) {
      const std::string dir = root + "/" + owner + "/" + ws;
      for (const std::string& sub : {dir, dir + "/" + kHeld}) {
        auto ids = names_in(sub, [](const std::string& n) { return is_snapshot_id(n); });
        if (!ids) return ids.error();
        for (const auto& id : *ids) out.push_back(sub + "/" + id);
      }
    }
  }
  return out;
}

common::Status PublishedManifests::remove_all() { return remove_tree_at(AT_FDCWD, dir_); }

common::Result<std::optional<Manifest>> PublishedManifests::newest() const {
  auto names = list_dir_at(AT_FDCWD, dir_, kMaxPublished);
  if (!names) {
    if (names.error().code == Errc::kNotFound) return std::optional<Manifest>();
    return names.error();
  }
  // The headers pick the newest (a manifest may list 200,000 files); only that one is read whole,
  // and a damaged one (the checksum) makes the next newest the candidate.
  std::vector<std::pair<int64_t, std::string>> by_age;
  for (const auto& id : *names) {
    if (!is_snapshot_id(id)) continue;  // a writer's temps, or foreign files
    UniqueFd fd(::open((dir_ + "/" + id).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) continue;  // removed meanwhile
    char buf[4096];
    ssize_t n = ::pread(fd.get(), buf, sizeof(buf), 0);
    auto h = parse_manifest_header(std::string_view(buf, n > 0 ? static_cast<size_t>(n) : 0));
    if (h) by_age.emplace_back(h->created_ns, id);
  }
  std::sort(by_age.begin(), by_age.end(), std::greater<>());
  for (const auto& [created, id] : by_age) {
    auto text = read_file_at(AT_FDCWD, dir_ + "/" + id, kMaxManifestBytes);
    if (!text) {
      if (text.error().code == Errc::kNotFound) continue;
      return text.error();
    }
    auto m = parse_manifest(*text);
    if (m && m->id == id) return std::optional<Manifest>(std::move(m.value()));
    common::log_warn("path={}/{} msg=\"a published manifest does not parse: the next newest is used\"", dir_, id);
  }
  return std::optional<Manifest>();
}

}  // namespace cellgate::workspace
