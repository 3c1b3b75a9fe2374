// SPDX-License-Identifier: BSD-3-Clause
// gc: removes objects no snapshot of any workspace references.
#include "workspace/gc.h"

#include <sys/stat.h>

#include <fcntl.h>
#include <unistd.h>

#include <unordered_set>

#include <fmt/core.h>

#include "workspace/io_util.h"
#include "workspace/layout.h"
#include "workspace/manifest.h"
#include "workspace/pins.h"

namespace cellgate::workspace {

using common::Errc;
using common::make_error;

common::Result<GcResult> collect_garbage(ObjectStore& store, const std::string& data_dir,
                                         const common::ProgressFn& progress) {
  auto lock = store.lock(FileLock::Mode::kExclusive);
  if (!lock) return lock.error();
  // A store that cluster nodes share holds objects that only other nodes' manifests and pins name:
  // this node cannot see them all, so it deletes nothing (docs/cluster.md §6).
  if (struct stat sb {}; ::stat((store.dir() + "/manifests").c_str(), &sb) == 0)
    return make_error(Errc::kUnavailable, "the store " + store.dir() + " is shared by cluster nodes (it has manifests/): "
                                          "gc cannot see the other nodes' snapshots and pins, so it deleted nothing");
  auto refs = enumerate_manifests(data_dir);
  if (!refs) return refs.error();
  std::unordered_set<std::string> live;
  uint64_t read = 0;
  for (const auto& r : *refs) {
    if (progress) progress({"manifests", ++read, refs->size(), 0});
    auto text = read_file_at(AT_FDCWD, r.workspace_dir + "/snapshots/" + r.id, uint64_t{1} << 30);
    if (!text && text.error().code == Errc::kNotFound) continue;  // retention removed it meanwhile
    if (!text) return make_error(Errc::kInternal, "gc aborted: " + text.error().message);
    auto m = parse_manifest(*text);
    if (!m) return make_error(Errc::kInternal, fmt::format("gc aborted: {}/{}: {}", r.workspace_dir, r.id, m.error().message));
    for (const auto& e : m->entries) {
      if (e.type == EntryType::kFile) live.insert(e.hash);
    }
  }
  // Objects held outside snapshots: a journal's large outputs, published artifacts.
  auto pinned = Pins(pins_dir(data_dir, "")).all();  // a shared store was refused above
  if (!pinned) return make_error(Errc::kInternal, "gc aborted: " + pinned.error().message);
  live.merge(*pinned);
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
  for (const auto& [hash, size] : dead) {
    if (auto rs = store.remove_object(hash); !rs) return rs.error();
    ++result.objects_removed;
    result.bytes_freed += size;
    if (progress) progress({"removing", result.objects_removed, dead.size(), result.bytes_freed});
  }
  // With the lock held exclusively no batch is in flight: every temp is a crash leftover.
  auto temps = store.remove_temps();
  if (!temps) return temps.error();
  result.temps_removed = *temps;
  return result;
}

}  // namespace cellgate::workspace
