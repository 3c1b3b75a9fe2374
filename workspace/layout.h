// SPDX-License-Identifier: BSD-3-Clause
// layout: the data dir's structure, name rules and snapshot id rules.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace cellgate::workspace {

// <data>/store (objects), <data>/workspaces/<owner>/<name>/{tree,snapshots,head,index,lock},
// <data>/tmp (staging for new and deleted workspaces; same filesystem, so renames are atomic),
// <data>/pins (objects held outside snapshots, pins.h).
std::string store_dir(const std::string& data_dir);
std::string workspaces_dir(const std::string& data_dir);
std::string data_tmp_dir(const std::string& data_dir);
std::string workspace_dir(const std::string& data_dir, std::string_view owner, std::string_view name);
// The data dir of a workspace dir (workspace_dir's inverse; "" when ws_dir is not such a path).
std::string data_dir_of(const std::string& ws_dir);

// Owner and workspace names: [A-Za-z0-9._-]{1,64}, not "." or "..". kBadRequest otherwise.
common::Status validate_name(std::string_view name);
// Snapshot ids: 8 decimal digits (creation counter), '-', 8 lowercase hex.
bool is_snapshot_id(std::string_view id);

struct ManifestRef {
  std::string workspace_dir;
  std::string id;
};
// Every snapshot manifest of every workspace (for GC and fsck). Thread-safe.
common::Result<std::vector<ManifestRef>> enumerate_manifests(const std::string& data_dir);

}  // namespace cellgate::workspace
