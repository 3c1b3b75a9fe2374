// SPDX-License-Identifier: BSD-3-Clause
// artifact_store: publishing a workspace file into the object store, and its provenance.
#include "gateway/artifact_store.h"

#include <sys/stat.h>

#include <algorithm>
#include <map>

#include <fmt/core.h>

#include "common/utf8.h"
#include "workspace/file_api.h"
#include "workspace/file_lock.h"
#include "workspace/layout.h"
#include "workspace/pins.h"
#include "workspace/safe_path.h"
#include "workspace/store_usage.h"

namespace cellgate::gateway {

using common::Errc;
using common::make_error;

namespace {

// How far back through a workspace's snapshots provenance looks (each step parses a manifest).
constexpr size_t kMaxProvenanceSteps = 64;

// The oldest snapshot in head's line of parents whose entry at path holds exactly sha256: the one
// that recorded the change, and so the execution that made it. None when the head does not hold
// these bytes (the file changed after the last snapshot, or was written outside any).
void find_provenance(const workspace::Workspace& ws, const std::string& path,
                     const std::vector<state::SnapshotRow>& history, StoredFile& out) {
  std::map<std::string, const state::SnapshotRow*> rows;
  for (const auto& r : history) rows[r.snapshot_id] = &r;
  std::string id = ws.head_id(), found;
  for (size_t step = 0; step < kMaxProvenanceSteps && !id.empty(); ++step) {
    auto m = ws.load_snapshot(id);
    if (!m) break;
    auto it = std::lower_bound(m->entries.begin(), m->entries.end(), path,
                               [](const workspace::Entry& e, const std::string& p) { return e.path < p; });
    if (it == m->entries.end() || it->path != path || it->type != workspace::EntryType::kFile || it->sparse ||
        it->hash != out.sha256)
      break;
    found = id;
    auto row = rows.find(id);
    if (row == rows.end()) break;
    id = row->second->parent;
  }
  if (found.empty()) return;
  out.snapshot = found;
  if (auto row = rows.find(found); row != rows.end()) {
    out.kernel_id = row->second->kernel_id;
    out.execution_count = row->second->execution_count;
  }
}

}  // namespace

common::Result<StoredFile> ArtifactStore::store_file(const workspace::Workspace& ws, const std::string& owner,
                                                     const std::string& id, const std::string& path,
                                                     const std::vector<state::SnapshotRow>& history,
                                                     const ArtifactLimits& limits) {
  if (auto st = workspace::validate_relative_path(path); !st) return st.error();
  auto ws_lock = workspace::FileLock::acquire(ws.dir() + "/lock", workspace::FileLock::Mode::kExclusive);
  if (!ws_lock) return ws_lock.error();
  auto& store = workspaces_.store();
  auto store_lock = store.lock(workspace::FileLock::Mode::kShared);  // gc waits until the pin is in
  if (!store_lock) return store_lock.error();
  auto file = workspace::FileApi(ws.tree_path()).open_file(path);
  if (!file) return file.error();

  const auto owner_lock = quota_lock(owner);
  std::lock_guard quota(*owner_lock);
  const std::string owner_dir = workspace::workspaces_dir(workspaces_.data_dir()) + "/" + owner;
  if (limits.store_bytes != 0) {
    const uint64_t held = workspace::owner_store_bytes(owner_dir, store, workspaces_.pins());
    const uint64_t cost = workspace::charged_bytes(file->size);
    if (held + cost > limits.store_bytes)
      return make_error(Errc::kInsufficientStorage,
                        fmt::format("store quota exceeded: {}'s snapshots and artifacts may hold {} bytes "
                                    "(store_bytes) and hold {}; this artifact needs {} more; delete artifacts, "
                                    "snapshots or workspaces",
                                    owner, limits.store_bytes, held, cost));
  }
  workspace::ObjectBatch batch(store);
  auto hash = batch.put_fd(file->fd.get(), file->size);
  if (!hash && hash.error().code == Errc::kTooLarge)
    return make_error(Errc::kConflict, path + " grew while it was published; publish it again once it is written");
  if (!hash) return hash.error();
  if (batch.bytes_read() != file->size)
    return make_error(Errc::kConflict, path + " shrank while it was published; publish it again once it is written");
  // The pin first, then the object: a crash between them leaves a pin naming nothing (pins.h).
  workspace::Pins pins(workspaces_.pins());
  if (auto st = pins.add(kArtifactPinKind, owner, id, {hash.value()}); !st) return st.error();
  if (auto st = batch.commit(); !st) {
    (void)pins.remove(kArtifactPinKind, owner, id);
    return st.error();
  }
  StoredFile out{hash.value(), file->size, {}, std::nullopt, {}};
  find_provenance(ws, path, history, out);
  return out;
}

std::shared_ptr<std::mutex> ArtifactStore::quota_lock(const std::string& owner) {
  std::lock_guard lk(quota_locks_mu_);
  // Owners no publish holds any more are forgotten: the map is as large as the publishes in flight.
  std::erase_if(quota_locks_, [](const auto& kv) { return kv.second.expired(); });
  auto& slot = quota_locks_[owner];
  auto lock = slot.lock();
  if (!lock) {
    lock = std::make_shared<std::mutex>();
    slot = lock;
  }
  return lock;
}

common::Status ArtifactStore::unpin(const std::string& owner, const std::string& id) {
  return workspace::Pins(workspaces_.pins()).remove(kArtifactPinKind, owner, id);
}

common::Result<common::UniqueFd> ArtifactStore::open(std::string_view sha256) const {
  return workspaces_.store().open_object(sha256);
}

common::Result<std::vector<std::string>> ArtifactStore::pinned(const std::string& owner) const {
  return workspace::Pins(workspaces_.pins()).names(kArtifactPinKind, owner);
}

std::string media_type_for(std::string_view name) {
  static const std::map<std::string, std::string, std::less<>> kTypes = {
      {"csv", "text/csv"},        {"gif", "image/gif"},          {"gz", "application/gzip"},
      {"htm", "text/html"},       {"html", "text/html"},         {"ipynb", "application/x-ipynb+json"},
      {"jpeg", "image/jpeg"},     {"jpg", "image/jpeg"},         {"json", "application/json"},
      {"md", "text/markdown"},    {"parquet", "application/vnd.apache.parquet"},
      {"pdf", "application/pdf"}, {"png", "image/png"},          {"py", "text/x-python"},
      {"svg", "image/svg+xml"},   {"tar", "application/x-tar"},  {"tsv", "text/tab-separated-values"},
      {"txt", "text/plain"},      {"webp", "image/webp"},        {"xml", "application/xml"},
      {"zip", "application/zip"},
  };
  const size_t dot = name.rfind('.');
  if (dot == std::string_view::npos || dot + 1 >= name.size()) return "application/octet-stream";
  std::string ext(name.substr(dot + 1));
  for (char& c : ext) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  auto it = kTypes.find(ext);
  return it == kTypes.end() ? "application/octet-stream" : it->second;
}

common::Status validate_artifact_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxArtifactNameBytes)
    return make_error(Errc::kBadRequest, fmt::format("name must be 1 to {} bytes", kMaxArtifactNameBytes));
  if (!common::valid_utf8(name)) return make_error(Errc::kBadRequest, "name must be UTF-8");
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7f || c == '/' || c == '\\' || c == '"')
      return make_error(Errc::kBadRequest, "name must not hold control characters, '/', '\\\\' or '\"'");
  return common::ok();
}

}  // namespace cellgate::gateway
