// SPDX-License-Identifier: BSD-3-Clause
// layout: the data dir's structure, name rules and snapshot id rules.
#include "workspace/layout.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/core.h>

#include "workspace/io_util.h"
#include "workspace/safe_path.h"
#include "workspace/volume.h"

namespace cellgate::workspace {

using common::Errc;
using common::make_error;

std::string store_dir(const std::string& data_dir) { return data_dir + "/store"; }
std::string workspaces_dir(const std::string& data_dir) { return data_dir + "/workspaces"; }
std::string data_tmp_dir(const std::string& data_dir) { return data_dir + "/tmp"; }
std::string workspace_dir(const std::string& data_dir, std::string_view owner, std::string_view name) {
  return fmt::format("{}/{}/{}", workspaces_dir(data_dir), owner, name);
}

std::string data_dir_of(const std::string& ws_dir) {
  std::string dir = ws_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  for (int up = 0; up < 3; ++up) {  // <data>/workspaces/<owner>/<name>
    const size_t slash = dir.rfind('/');
    if (slash == std::string::npos) return {};
    dir.resize(slash);
  }
  return dir;
}

common::Status validate_name(std::string_view name) {
  if (name.empty() || name.size() > 64 || name == "." || name == "..") {
    return make_error(Errc::kBadRequest, "names are 1..64 characters of [A-Za-z0-9._-], not '.' or '..'");
  }
  for (char c : name) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '-';
    if (!ok) return make_error(Errc::kBadRequest, "names are 1..64 characters of [A-Za-z0-9._-]");
  }
  return common::ok();
}

bool is_snapshot_id(std::string_view id) {
  if (id.size() != 17 || id[8] != '-') return false;
  for (size_t i = 0; i < 8; ++i) {
    if (id[i] < '0' || id[i] > '9') return false;
  }
  for (size_t i = 9; i < 17; ++i) {
    if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f'))) return false;
  }
  return true;
}

common::Result<std::vector<ManifestRef>> enumerate_manifests(const std::string& data_dir) {
  std::vector<ManifestRef> out;
  // With a workspace volume the manifests are inside it: when it is not mounted, the empty dir
  // under it does not mean "no snapshots" (gc would delete every object).
  if (::access(Volume::image_path(data_dir).c_str(), F_OK) == 0 && !Volume::is_mounted(data_dir))
    return make_error(Errc::kUnavailable, "the workspace volume " + Volume::image_path(data_dir) + " is not mounted");
  std::string root = workspaces_dir(data_dir);
  auto owners = list_dir_at(AT_FDCWD, root);
  if (!owners) return owners.error().code == Errc::kNotFound ? out : common::Result<std::vector<ManifestRef>>(owners.error());
  for (const auto& owner : *owners) {
    if (!validate_name(owner)) continue;
    auto names = list_dir_at(AT_FDCWD, root + "/" + owner);
    if (!names) return names.error();
    for (const auto& name : *names) {
      if (!validate_name(name)) continue;
      std::string ws = workspace_dir(data_dir, owner, name);
      auto ids = list_dir_at(AT_FDCWD, ws + "/snapshots");
      if (!ids) {
        if (ids.error().code == Errc::kNotFound) continue;
        return ids.error();
      }
      for (const auto& id : *ids) {
        if (is_snapshot_id(id)) out.push_back(ManifestRef{ws, id});
      }
    }
  }
  return out;
}

}  // namespace cellgate::workspace
