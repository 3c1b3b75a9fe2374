// SPDX-License-Identifier: BSD-3-Clause
// artifact_records: the artifacts table: files published out of a workspace, immutable, with where
// their bytes are (a store object) and where they came from (the workspace, the kernel and execution).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "state/database.h"

namespace cellgate::state {

struct ArtifactRow {
  std::string id;            // 32 lowercase hex, random: an id is no oracle and cannot be guessed
  std::string owner;         // the workspace's owner: who sees it, and whose store quota pays for it
  std::string name;          // shown and offered as the download's file name
  std::string workspace;     // where it was published from
  std::string path;          // the file's path in that workspace's tree
  std::string sha256;        // the content's, which is also its object in the store
  int64_t size = 0;
  std::string media_type;
  std::string published_by;  // the authenticated user who published it (an admin may for another owner)
  std::string created;       // iso8601
  std::string kernel_id{};   // the kernel whose execution last changed the file; "" when unknown
  std::optional<int64_t> execution_count{};
  std::string snapshot{};    // the snapshot that first recorded these bytes at path; "" when none did
};

// Errors as Result: kConflict for a duplicate id, kNotFound when the id names no row.
common::Status insert_artifact(Database& db, const ArtifactRow& a);
common::Result<ArtifactRow> get_artifact(Database& db, const std::string& id);
// Newest first; owner nullopt = everyone's.
common::Result<std::vector<ArtifactRow>> list_artifacts(Database& db, const std::optional<std::string>& owner);
common::Result<int64_t> count_artifacts(Database& db, const std::string& owner);
common::Status delete_artifact(Database& db, const std::string& id);

}  // namespace cellgate::state
