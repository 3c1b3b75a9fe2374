// SPDX-License-Identifier: BSD-3-Clause
// gc: removes objects no snapshot of any workspace references and no pin holds.
#include "workspace/gc.h"

#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <unordered_set>

#include <fmt/core.h>

#include "workspace/io_util.h"
#include "workspace/layout.h"
#include "workspace/manifest.h"
#include "workspace/pins.h"
#include "workspace/published_manifests.h"
#include "workspace/safe_path.h"

namespace cellgate::workspace {

using common::Errc;
using common::make_error;

namespace {

constexpr uint64_t kMaxManifestBytes = uint64_t{1} << 30;
// Re-listings of the published manifests when some vanished while read (retention on another node).
constexpr int kMaxMarkRounds = 4;

// Marks the files path's manifest names. false: path is gone (removed meanwhile).
common::Result<bool> mark_manifest(const std::string& path, std::unordered_set<std::string>& live) {
  auto text = read_file_at(AT_FDCWD, path, kMaxManifestBytes);
  if (!text && text.error().code == Errc::kNotFound) return false;
  if (!text) return make_error(Errc::kInternal, "gc aborted: " + text.error().message);
  auto m = parse_manifest(*text);
  if (!m) return make_error(Errc::kInternal, fmt::format("gc aborted: {}: {}", path, m.error().message));
  for (const auto& e : m->entries) {
    if (e.type == EntryType::kFile) live.insert(e.hash);
  }
  return true;
}

// Every manifest published in the store. A node publishes a snapshot's manifest before it unpublishes
// the ones retention drops, so a manifest that vanished between the listing and its reading means a
// newer one to read: the listing is taken again until a round finds every manifest it listed.
common::Status mark_published(const std::string& store_dir, std::unordered_set<std::string>& live,
                              const common::ProgressFn& progress) {
  std::unordered_set<std::string> read;
  for (int round = 0; round < kMaxMarkRounds; ++round) {
    auto paths = PublishedManifests::all_paths(store_dir);
    if (!paths) return make_error(Errc::kInternal, "gc aborted: " + paths.error().message);
    bool vanished = false;
    uint64_t n = 0;
    for (const auto& p : *paths) {
      if (progress) progress({"manifests", ++n, paths->size(), 0});
      if (!read.insert(p).second) continue;
      auto found = mark_manifest(p, live);
      if (!found) return found.error();
      vanished |= !found.value();
    }
    if (!vanished) return common::ok();
  }
  return make_error(Errc::kUnavailable, "gc deleted nothing: the published manifests kept changing while it read them");
}

bool older_than(int objects_fd, const std::string& rel, time_t cutoff) {
  struct stat st {};
  return ::fstatat(objects_fd, rel.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_mtime <= cutoff;
}

// Removes an unmarked object unless it was touched (reused) after cutoff. It is renamed away first and
// its age read again there: a node that reuses it afterwards finds it gone and writes it again, and one
// that reused it just before is seen, and the object put back.
common::Result<bool> remove_if_old(ObjectStore& store, const std::string& hash, time_t cutoff) {
  const std::string rel = ObjectStore::relative_path(hash);
  if (!older_than(store.objects_fd(), rel, cutoff)) return false;
  const std::string tomb = hash.substr(0, 2) + "/.gc-" + hash.substr(2);
  if (::renameat(store.objects_fd(), rel.c_str(), store.objects_fd(), tomb.c_str()) != 0)
    return errno == ENOENT ? common::Result<bool>(false) : common::Result<bool>(errno_error("rename object " + hash, errno));
  if (!older_than(store.objects_fd(), tomb, cutoff)) {
    if (::renameat(store.objects_fd(), tomb.c_str(), store.objects_fd(), rel.c_str()) != 0)
      return errno_error("put back object " + hash, errno);
    return false;
  }
  if (::unlinkat(store.objects_fd(), tomb.c_str(), 0) != 0 && errno != ENOENT) return errno_error("unlink object", errno);
  return true;
}

}  // namespace

common::Result<GcResult> collect_garbage(ObjectStore& store, const GcOptions& options,
                                         const common::ProgressFn& progress) {
  auto lock = store.lock(FileLock::Mode::kExclusive);
  if (!lock) return lock.error();
  // Manifests in a store this data dir does not own are other nodes' (docs/cluster.md §6).
  if (struct stat sb {}; !options.shared && ::stat((store.dir() + "/manifests").c_str(), &sb) == 0)
    return make_error(Errc::kUnavailable, "the store " + store.dir() + " is shared by cluster nodes (it has manifests/): "
                                          "run gc with --store-dir " + store.dir() + " so that it marks every node's snapshots; it deleted nothing");
  // The age rule's cutoff, taken before anything is marked: an object written after it is young.
  const time_t cutoff = ::time(nullptr) - static_cast<time_t>(options.min_age.count());
  auto refs = enumerate_manifests(options.data_dir);
  if (!refs) return refs.error();
  std::unordered_set<std::string> live;
  uint64_t read = 0;
  for (const auto& r : *refs) {
    if (progress) progress({"manifests", ++read, refs->size(), 0});
    // Gone: retention removed it meanwhile.
    if (auto found = mark_manifest(r.workspace_dir + "/snapshots/" + r.id, live); !found) return found.error();
  }
  if (options.shared)
    if (auto st = mark_published(store.dir(), live, progress); !st) return st.error();
  // Objects held outside snapshots: a journal's large outputs, published artifacts. With a shared store
  // the pins beside it, and those this data dir still holds (a node that has not started since).
  std::vector<PinsDir> pin_dirs{pins_dir(options.data_dir, "")};
  if (options.shared) pin_dirs.push_back(PinsDir{store.dir() + "/pins"});
  for (const auto& dir : pin_dirs) {
    auto pinned = Pins(dir).all();
    if (!pinned) return make_error(Errc::kInternal, "gc aborted: " + pinned.error().message);
    live.merge(*pinned);
  }
  GcResult result;
  std::vector<std::pair<std::string, uint64_t>> dead;
  uint64_t seen = 0;
  auto st = store.for_each_object([&](const std::string& hash, uint64_t size) {
    if (progress) progress({"objects", ++seen, 0, 0});
    if (live.count(hash) != 0) {
      ++result.objects_kept;
    } else {
      dead.emplace_back(hash, size);
    }
  });
  if (!st) return st.error();
  uint64_t done = 0;
  for (const auto& [hash, size] : dead) {
    if (progress) progress({"removing", ++done, dead.size(), result.bytes_freed});
    if (options.shared) {
      auto removed = remove_if_old(store, hash, cutoff);
      if (!removed) return removed.error();
      if (!removed.value()) {
        ++result.objects_young;
        continue;
      }
    } else if (auto rs = store.remove_object(hash); !rs) {
      return rs.error();
    }
    ++result.objects_removed;
    result.bytes_freed += size;
  }
  // Locally, with the lock held exclusively no batch is in flight: every temp is a crash leftover. A
  // shared store's temps may be other nodes' writes in flight: only old ones go.
  auto temps = store.remove_temps(options.shared ? options.min_age : std::chrono::seconds(0));
  if (!temps) return temps.error();
  result.temps_removed = *temps;
  return result;
}

}  // namespace cellgate::workspace
