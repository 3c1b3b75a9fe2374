// SPDX-License-Identifier: BSD-3-Clause
// workspace: one workspace's live tree and snapshots (incremental snapshot, list, diff, restore, retention).
#include "workspace/workspace.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <sys/stat.h>

#include <algorithm>
#include <optional>
#include <set>
#include <cerrno>
#include <unordered_set>

#include <fmt/core.h>

#include "common/random.h"
#include "common/unique_fd.h"
#include "workspace/io_util.h"
#include "workspace/layout.h"
#include "workspace/restorer.h"
#include "workspace/safe_path.h"
#include "workspace/store_usage.h"
#include "workspace/tar_writer.h"
#include "workspace/tree_scan.h"

namespace cellgate::workspace {

using common::Errc;
using common::make_error;
using common::UniqueFd;

namespace {

constexpr uint64_t kMaxManifestBytes = uint64_t{1} << 30;
constexpr uint64_t kMaxIndexBytes = uint64_t{1} << 30;
constexpr size_t kMaxLabelBytes = 128;

common::Result<UniqueFd> open_dir(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return errno_error("open " + path, errno);
  return fd;
}

int64_t now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

struct Locks {
  FileLock workspace;
  FileLock store;
};

common::Result<Locks> lock_both(const std::string& dir, const ObjectStore& store, FileLock::Mode mode) {
  auto w = FileLock::acquire(dir + "/lock", mode);
  if (!w) return w.error();
  auto s = store.lock(FileLock::Mode::kShared);
  if (!s) return s.error();
  return Locks{std::move(w.value()), std::move(s.value())};
}

}  // namespace

std::string Workspace::head_id() const {
  auto text = read_file_at(AT_FDCWD, dir_ + "/head", 64);
  if (!text || !is_snapshot_id(*text)) return {};
  return *text;
}

common::Result<Manifest> Workspace::load_snapshot(const std::string& id) const {
  if (!is_snapshot_id(id)) return make_error(Errc::kNotFound, "no such snapshot");
  auto text = read_file_at(AT_FDCWD, dir_ + "/snapshots/" + id, kMaxManifestBytes);
  if (!text) {
    if (text.error().code == Errc::kNotFound) return make_error(Errc::kNotFound, "no such snapshot: " + id);
    return text.error();
  }
  auto m = parse_manifest(*text);
  if (!m) return make_error(Errc::kInternal, fmt::format("snapshot {}: {}", id, m.error().message));
  return m;
}

common::Result<std::vector<SnapshotInfo>> Workspace::list_snapshots() const {
  auto names = list_dir_at(AT_FDCWD, dir_ + "/snapshots");
  if (!names) return names.error();
  std::vector<std::string> ids;
  for (auto& n : *names) {
    if (is_snapshot_id(n)) ids.push_back(std::move(n));
  }
  std::sort(ids.begin(), ids.end());  // the zero-padded counter makes this creation order
  std::vector<SnapshotInfo> out;
  for (const auto& id : ids) {
    UniqueFd fd(::open((dir_ + "/snapshots/" + id).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) continue;  // deleted meanwhile
    char buf[4096];
    ssize_t n = ::pread(fd.get(), buf, sizeof(buf), 0);
    auto m = parse_manifest_header(std::string_view(buf, n > 0 ? static_cast<size_t>(n) : 0));
    if (!m) continue;  // fsck reports damaged manifests
    out.push_back(SnapshotInfo{id, m->created_ns, m->automatic, m->label, m->entry_count, m->total_bytes});
  }
  return out;
}

common::Result<Diff> Workspace::diff(const std::string& from_id, const std::string& to_id) const {
  auto a = load_snapshot(from_id);
  if (!a) return a.error();
  auto b = load_snapshot(to_id);
  if (!b) return b.error();
  return diff_entries(a->entries, b->entries);
}

common::Result<SnapshotResult> Workspace::snapshot(const SnapshotOptions& options) {
  if (options.label.size() > kMaxLabelBytes) return make_error(Errc::kBadRequest, "label too long");
  auto locks = lock_both(dir_, *store_, FileLock::Mode::kExclusive);
  if (!locks) return locks.error();
  auto tree = open_dir(tree_path());
  if (!tree) return tree.error();
  StatIndex index;
  std::string index_text;
  if (auto text = read_file_at(AT_FDCWD, dir_ + "/index", kMaxIndexBytes); text) {
    if (auto parsed = parse_index(*text); parsed) index = std::move(parsed.value());
    index_text = std::move(text.value());
  }
  std::string head = head_id();
  // With a shared store the head's objects are safe from every node's gc only while its manifest is
  // published: a head whose publish failed (the shared filesystem was away, or this node stopped
  // between the two) is not trusted below; its objects are touched or written again, and it is
  // published once whole (docs/cluster.md §6).
  const bool head_marked = head.empty() || !published_ || published_->has(head);
  std::vector<Entry> previous;
  if (!head.empty()) {
    auto m = load_snapshot(head);
    if (m) {
      previous = std::move(m->entries);
    } else if (m.error().code != Errc::kNotFound) {
      return m.error();
    }
  }

  ObjectBatch batch(*store_);
  batch.after_object_write = [this](size_t n) {
    if (fault_hook_) fault_hook_(FaultPoint::kObjectWritten, n);
  };
  HashFileFn hash_file = [&](int fd, const Entry&) -> common::Result<FileHash> {
    // Files may grow while being read: the cap bounds the bytes actually read, too.
    auto h = batch.put_file(fd, config_.max_bytes - std::min(config_.max_bytes, batch.bytes_read()));
    if (!h) return h.error();
    return FileHash{std::move(h->hash), h->size, h->bytes_read, h->sparse};
  };
  ScanLimits limits;
  limits.max_bytes = config_.max_bytes;
  limits.max_files = config_.max_files;
  limits.deadline = std::chrono::steady_clock::now() + config_.snapshot_timeout;
  // Objects cannot vanish while we hold the store lock shared (GC needs it exclusively), so
  // each hash is checked once; those of the head manifest are referenced, hence present (GC
  // keeps them; fsck reports external damage).
  std::unordered_set<std::string> present;
  present.reserve(previous.size());
  for (const Entry& e : previous) {
    if (head_marked && e.type == EntryType::kFile) present.insert(e.hash);
  }
  auto can_reuse = [&](const std::string& hash) {
    if (present.count(hash) != 0) return true;
    // Not in the head: maybe in no published manifest either, so it is touched (object_store.h).
    if (!store_->reuse(hash)) return false;
    present.insert(hash);
    return true;
  };
  auto scan = scan_tree(tree->get(), index, limits, hash_file, can_reuse);
  if (!scan) return scan.error();

  SnapshotResult result;
  result.diff = diff_entries(previous, scan->entries);
  result.files_hashed = scan->files_hashed;
  result.files_reused = scan->files_reused;
  result.bytes_hashed = scan->bytes_hashed;
  result.objects_written = batch.objects_written();
  result.skipped = std::move(scan->skipped);
  auto dir = open_dir(dir_);
  if (!dir) return dir.error();
  // The index is only a cache: losing it (crash, failed write) costs re-hashing, nothing more.
  auto save_index = [&] {
    std::string text = serialize_index(scan->index);
    if (text != index_text) (void)replace_file(dir->get(), "index", text);
  };
  if (options.only_if_changed && result.diff.empty()) {
    if (!head_marked) {
      // The head, whole again in the store (what gc took meanwhile is written back from the tree).
      if (auto st = batch.commit(); !st) return st.error();
      if (auto text = read_file_at(dir->get(), "snapshots/" + head, kMaxManifestBytes); text) publish_copy(head, *text);
    }
    save_index();
    result.id = head;
    return result;
  }
  auto ids = list_dir_at(dir->get(), "snapshots");
  if (!ids) return ids.error();
  uint64_t counter = 0;
  ids->push_back(head);
  for (const auto& id : *ids) {
    if (is_snapshot_id(id)) counter = std::max<uint64_t>(counter, std::stoull(id.substr(0, 8)));
  }
  Manifest m;
  m.id = fmt::format("{:08}-{}", counter + 1, common::random_hex(4));
  m.created_ns = now_ns();
  m.automatic = options.automatic;
  m.label = options.label;
  m.entries = std::move(scan->entries);
  const std::string manifest_text = serialize_manifest(m);
  // What retention drops once this snapshot is in (automatic snapshots only), planned now so the
  // store quota is checked on the state the snapshot leaves.
  std::vector<std::string> prune;
  if (options.automatic) {
    auto list = list_snapshots();
    if (!list) return list.error();
    list->push_back(SnapshotInfo{m.id, m.created_ns, true, m.label, 0, 0});
    prune = retention_plan(*list, m.id);
  }
  std::optional<StoreRefs> refs;
  if (config_.store_bytes != 0) {
    auto charged = check_store_quota(batch, m.id, m.entries, manifest_text.size(), prune);
    if (!charged) return charged.error();
    refs.emplace(std::move(charged.value()));
  }
  if (auto st = batch.commit(); !st) return st.error();
  auto snaps = open_dir(dir_ + "/snapshots");
  if (!snaps) return snaps.error();
  // Manifests are only written under the workspace lock, so any temp here is a crash leftover.
  if (auto names = list_dir_at(snaps->get(), ""); names) {
    for (const auto& n : *names) {
      if (!n.empty() && n[0] == '.') ::unlinkat(snaps->get(), n.c_str(), 0);
    }
  }
  auto st = write_file_atomic(snaps->get(), m.id, manifest_text, [this] {
    if (fault_hook_) fault_hook_(FaultPoint::kBeforeManifestRename, 0);
  });
  if (!st) return st.error();
  if (auto hs = write_file_atomic(dir->get(), "head", m.id); !hs) return hs.error();
  publish_copy(m.id, manifest_text, options.held);
  save_index();
  result.created = true;
  result.id = m.id;
  result.parent = head;
  result.created_ns = m.created_ns;
  result.entries = m.entries.size();
  for (const auto& e : m.entries) result.bytes += e.size;
  for (const auto& id : prune) {
    std::string path = dir_ + "/snapshots/" + id;
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return errno_error("unlink " + path, errno);
    unpublish(id);
    result.pruned.push_back(id);
  }
  // A refs file that failed to save is rebuilt from the manifests at the next snapshot.
  if (refs) (void)refs->save(dir_);
  return result;
}

std::vector<std::string> Workspace::retention_plan(const std::vector<SnapshotInfo>& list, const std::string& head) const {
  size_t autos = 0;
  for (const auto& s : list) autos += (s.automatic && s.label.empty()) ? 1 : 0;
  std::vector<std::string> doomed;
  for (const auto& s : list) {  // oldest first
    if (autos <= config_.keep_auto) break;
    if (!s.automatic || !s.label.empty()) continue;
    --autos;
    if (s.id != head) doomed.push_back(s.id);
  }
  return doomed;
}

common::Result<StoreRefs> Workspace::check_store_quota(const ObjectBatch& batch, const std::string& id,
                                                       const std::vector<Entry>& entries, uint64_t manifest_size,
                                                       const std::vector<std::string>& prune) const {
  auto cost = [&](const std::string& hash) { return charged_bytes(batch.object_size(hash)); };
  auto refs = StoreRefs::load(dir_, cost);
  if (!refs) return refs.error();
  refs->add(id, entries, cost);
  std::set<std::string> dropped(prune.begin(), prune.end());
  for (const auto& old : prune) {
    auto m = load_snapshot(old);
    if (!m) return m.error();
    refs->remove(old, m->entries);
  }
  const uint64_t mine = refs->object_bytes() + manifest_bytes(dir_, dropped) + charged_bytes(manifest_size);
  const uint64_t others = other_workspaces_bytes(dir_, *store_, pins_);
  if (others + mine > config_.store_bytes)
    return make_error(Errc::kInsufficientStorage,
                      fmt::format("store quota exceeded: the owner's snapshots and artifacts may hold {} bytes (store_bytes); with this "
                                  "one they would hold {} ({} in this workspace); delete snapshots or workspaces",
                                  config_.store_bytes, others + mine, mine));
  return refs;
}

common::Result<std::vector<std::string>> Workspace::retention_locked() {
  auto list = list_snapshots();
  if (!list) return list.error();
  std::vector<std::string> pruned;
  for (const auto& id : retention_plan(*list, head_id())) {
    std::string path = dir_ + "/snapshots/" + id;
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return errno_error("unlink " + path, errno);
    unpublish(id);
    pruned.push_back(id);
  }
  return pruned;
}

common::Result<std::vector<std::string>> Workspace::apply_retention() {
  auto lock = FileLock::acquire(dir_ + "/lock", FileLock::Mode::kExclusive);
  if (!lock) return lock.error();
  return retention_locked();
}

common::Status Workspace::delete_snapshot(const std::string& id) {
  if (!is_snapshot_id(id)) return make_error(Errc::kNotFound, "no such snapshot");
  auto lock = FileLock::acquire(dir_ + "/lock", FileLock::Mode::kExclusive);
  if (!lock) return lock.error();
  // The store quota counts it until its refs go: at once, so that deleting frees quota now.
  std::optional<StoreRefs> refs;
  if (config_.store_bytes != 0) {
    auto m = load_snapshot(id);
    auto loaded = m ? StoreRefs::load(dir_, [&](const std::string& hash) { return object_charge(hash); })
                    : common::Result<StoreRefs>(m.error());
    if (loaded) {
      refs.emplace(std::move(loaded.value()));
      refs->remove(id, m->entries);
    }
  }
  std::string path = dir_ + "/snapshots/" + id;
  if (::unlink(path.c_str()) != 0) return errno_error("delete snapshot " + id, errno);
  unpublish(id);
  if (refs) (void)refs->save(dir_);
  return common::ok();
}

uint64_t Workspace::object_charge(const std::string& hash) const {
  struct stat st {};
  if (::fstatat(store_->objects_fd(), ObjectStore::relative_path(hash).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return 0;
  return charged_bytes(static_cast<uint64_t>(st.st_size));
}

common::Result<RestoreResult> Workspace::restore_locked(const Manifest& target, const common::ProgressFn& progress) {
  auto tree = open_dir(tree_path());
  if (!tree) return tree.error();
  StatIndex index;
  if (auto text = read_file_at(AT_FDCWD, dir_ + "/index", kMaxIndexBytes); text) {
    if (auto parsed = parse_index(*text); parsed) index = std::move(parsed.value());
  }
  uint64_t max_live = std::max<uint64_t>(config_.max_files * 2, 1'000'000);
  auto stats = restore_tree(*store_, tree->get(), target.entries, index, max_live, progress);
  if (!stats) return stats.error();
  auto dir = open_dir(dir_);
  if (!dir) return dir.error();
  if (auto st = write_file_atomic(dir->get(), "head", target.id); !st) return st.error();
  (void)replace_file(dir->get(), "index", serialize_index(stats->index));
  return RestoreResult{std::move(stats->applied), stats->files_written};
}

common::Result<RestoreResult> Workspace::restore(const std::string& id, const common::ProgressFn& progress) {
  auto locks = lock_both(dir_, *store_, FileLock::Mode::kExclusive);
  if (!locks) return locks.error();
  auto m = load_snapshot(id);
  if (!m) return m.error();
  return restore_locked(*m, progress);
}

common::Result<RestoreResult> Workspace::adopt(const Manifest& manifest) {
  auto locks = lock_both(dir_, *store_, FileLock::Mode::kExclusive);
  if (!locks) return locks.error();
  auto snaps = open_dir(dir_ + "/snapshots");
  if (!snaps) return snaps.error();
  const std::string text = serialize_manifest(manifest);
  // A workspace restored from another holds its snapshot's objects again: the owner pays for them
  // again (a fork is as much a copy as the live tree the volume charges it for).
  std::optional<StoreRefs> refs;
  if (config_.store_bytes != 0) {
    auto cost = [&](const std::string& hash) { return object_charge(hash); };
    auto loaded = StoreRefs::load(dir_, cost);
    if (!loaded) return loaded.error();
    refs.emplace(std::move(loaded.value()));
    refs->add(manifest.id, manifest.entries, cost);
    const uint64_t mine = refs->object_bytes() + manifest_bytes(dir_) + charged_bytes(text.size());
    const uint64_t others = other_workspaces_bytes(dir_, *store_, pins_);
    if (others + mine > config_.store_bytes)
      return make_error(Errc::kInsufficientStorage,
                        fmt::format("store quota exceeded: the owner's snapshots and artifacts may hold {} bytes (store_bytes); "
                                    "with this restore they would hold {}", config_.store_bytes, others + mine));
  }
  if (auto st = write_file_atomic(snaps->get(), manifest.id, text); !st) return st.error();
  if (refs) (void)refs->save(dir_);
  auto restored = restore_locked(manifest);
  if (restored) publish_copy(manifest.id, text);
  return restored;
}

common::Status Workspace::write_tar(const std::string& id, const TarSink& sink) const {
  auto lock = store_->lock(FileLock::Mode::kShared);  // GC waits until the archive is out
  if (!lock) return lock.error();
  auto m = load_snapshot(id);
  if (!m) return m.error();
  return cellgate::workspace::write_tar(*store_, *m, sink);
}

}  // namespace cellgate::workspace
