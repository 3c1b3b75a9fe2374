// SPDX-License-Identifier: BSD-3-Clause
// artifact_store: a workspace file published as an immutable artifact: its bytes copied into the
// snapshot store as one object, pinned for the artifact (so gc keeps it and the owner's store quota
// counts it), and where it came from read out of the workspace's snapshot history.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "state/workspace_records.h"
#include "workspace/workspace.h"
#include "workspace/workspace_manager.h"

namespace cellgate::gateway {

inline constexpr size_t kMaxArtifactNameBytes = 255;
inline constexpr const char* kArtifactPinKind = "artifact";

struct ArtifactLimits {
  uint64_t store_bytes = 0;  // the owner's store quota, snapshots and artifacts together; 0 = none
};

// The stored copy of a file, and the execution that made it as the snapshots recorded it.
struct StoredFile {
  std::string sha256;
  uint64_t size = 0;
  std::string kernel_id;                   // "" when no snapshot taken after an execute holds these bytes
  std::optional<int64_t> execution_count;
  std::string snapshot;                    // the oldest snapshot in the head's line with these bytes at path
};

// Thread-safe. The blocking calls run on the offload pool; none touches the state database.
class ArtifactStore {
 public:
  explicit ArtifactStore(workspace::WorkspaceManager& workspaces) : workspaces_(workspaces) {}

  // Blocking. Copies ws's file at path (validated; no symlink anywhere in it, a regular file only)
  // into the store, pinned as <pins>/artifact/<owner>/<id>. history: the workspace's snapshot rows
  // (state::list_snapshots), whose parents and executions say who made the file. Holds the workspace
  // lock and the store lock shared meanwhile: a snapshot of the same workspace waits, gc waits.
  // Errors: kBadRequest (path), kNotFound, kInsufficientStorage (the owner's store quota, naming it),
  // kConflict (the file changed while it was read), kInternal.
  common::Result<StoredFile> store_file(const workspace::Workspace& ws, const std::string& owner,
                                        const std::string& id, const std::string& path,
                                        const std::vector<state::SnapshotRow>& history, const ArtifactLimits& limits);
  // Blocking. Drops the pin: the owner stops paying for the bytes, gc may take them. Absent is success.
  common::Status unpin(const std::string& owner, const std::string& id);
  // Blocking. The object, read-only (kNotFound when gc took it after its pin went).
  common::Result<common::UniqueFd> open(std::string_view sha256) const;
  // Blocking. The artifact pins of owner (the ids); a pin without a row is a delete a crash cut short.
  common::Result<std::vector<std::string>> pinned(const std::string& owner) const;

 private:
  // The lock one owner's publishes take to check and spend that owner's quota: one at a time per
  // owner, so two cannot both fit in the room left, while another owner's large file (hashed under
  // the lock) holds up nobody else.
  std::shared_ptr<std::mutex> quota_lock(const std::string& owner);

  workspace::WorkspaceManager& workspaces_;
  std::mutex quota_locks_mu_;
  std::unordered_map<std::string, std::weak_ptr<std::mutex>> quota_locks_;  // owners publishing now
};

// The Content-Type for a file name, by its extension; application/octet-stream when unknown.
std::string media_type_for(std::string_view name);
// A name is 1-255 bytes of UTF-8 without control characters, '/', '\\' or '"' (it goes into a
// Content-Disposition header as it is). kBadRequest otherwise.
common::Status validate_artifact_name(std::string_view name);

}  // namespace cellgate::gateway
