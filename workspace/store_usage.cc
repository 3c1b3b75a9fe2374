// SPDX-License-Identifier: BSD-3-Clause
// store_usage: what one workspace's snapshots hold in the object store, for the owner's store quota.
#include "workspace/store_usage.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <string_view>

#include <fmt/core.h>

#include "common/unique_fd.h"
#include "workspace/io_util.h"
#include "workspace/layout.h"
#include "workspace/object_store.h"
#include "workspace/pins.h"
#include "workspace/safe_path.h"
#include "workspace/sha256.h"

namespace cellgate::workspace {
namespace {

constexpr std::string_view kMagic = "cellgate-refs 1\n";
constexpr uint64_t kMaxRefsBytes = uint64_t{1} << 30;
constexpr uint64_t kMaxManifestBytes = uint64_t{1} << 30;

template <typename T>
bool parse_num(std::string_view s, T& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size();
}

// The snapshot ids in <ws>/snapshots.
std::set<std::string> snapshot_ids(const std::string& ws_dir) {
  std::set<std::string> ids;
  if (auto names = list_dir_at(AT_FDCWD, ws_dir + "/snapshots"); names) {
    for (auto& n : *names) {
      if (is_snapshot_id(n)) ids.insert(std::move(n));
    }
  }
  return ids;
}

// Parses the refs text; false when damaged.
bool parse(std::string_view text, std::set<std::string>& snapshots,
           std::unordered_map<std::string, std::pair<uint64_t, uint64_t>>& objects, uint64_t& bytes) {
  if (!text.starts_with(kMagic)) return false;
  size_t pos = kMagic.size();
  auto next_line = [&](std::string_view& line) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) return false;
    line = text.substr(pos, nl - pos);
    pos = nl + 1;
    return true;
  };
  std::string_view line;
  uint64_t count = 0;
  if (!next_line(line) || !line.starts_with("bytes ") || !parse_num(line.substr(6), bytes)) return false;
  if (!next_line(line) || !line.starts_with("snapshots ") || !parse_num(line.substr(10), count)) return false;
  for (uint64_t i = 0; i < count; ++i) {
    if (!next_line(line) || !is_snapshot_id(line)) return false;
    snapshots.emplace(line);
  }
  uint64_t sum = 0;
  while (next_line(line)) {
    size_t a = line.find(' '), b = line.rfind(' ');
    uint64_t size = 0, refs = 0;
    if (a == std::string_view::npos || a == b || !is_sha256_hex(line.substr(0, a)) ||
        !parse_num(line.substr(a + 1, b - a - 1), size) || !parse_num(line.substr(b + 1), refs) || refs == 0)
      return false;
    objects.emplace(std::string(line.substr(0, a)), std::make_pair(size, refs));
    sum += size;
  }
  return pos == text.size() && sum == bytes;
}

}  // namespace

uint64_t charged_bytes(uint64_t size) { return (size + 4095) / 4096 * 4096; }

common::Result<StoreRefs> StoreRefs::load(const std::string& ws_dir,
                                          const std::function<uint64_t(const std::string&)>& object_bytes) {
  const std::set<std::string> have = snapshot_ids(ws_dir);
  StoreRefs refs;
  if (auto text = read_file_at(AT_FDCWD, ws_dir + "/refs", kMaxRefsBytes); text) {
    std::unordered_map<std::string, std::pair<uint64_t, uint64_t>> objects;
    if (parse(*text, refs.snapshots_, objects, refs.bytes_) && refs.snapshots_ == have) {
      refs.objects_.reserve(objects.size());
      for (auto& [hash, v] : objects) refs.objects_.emplace(hash, Ref{v.first, v.second});
      return refs;
    }
  }
  // Rebuilt from the manifests themselves: the truth.
  refs = StoreRefs();
  for (const auto& id : have) {
    auto text = read_file_at(AT_FDCWD, ws_dir + "/snapshots/" + id, kMaxManifestBytes);
    if (!text && text.error().code == common::Errc::kNotFound) continue;
    if (!text) return text.error();
    auto m = parse_manifest(*text);
    if (!m) return common::make_error(common::Errc::kInternal, fmt::format("snapshot {}: {}", id, m.error().message));
    refs.add(id, m->entries, object_bytes);
  }
  return refs;
}

void StoreRefs::add(const std::string& id, const std::vector<Entry>& entries,
                    const std::function<uint64_t(const std::string&)>& object_bytes) {
  if (!snapshots_.insert(id).second) return;
  std::set<std::string_view> seen;  // a manifest naming one object twice references it once
  for (const Entry& e : entries) {
    if (e.type != EntryType::kFile || e.hash.empty() || !seen.insert(e.hash).second) continue;
    auto [it, fresh] = objects_.try_emplace(e.hash);
    if (fresh) {
      it->second.bytes = object_bytes(e.hash);
      bytes_ += it->second.bytes;
    }
    ++it->second.count;
  }
}

void StoreRefs::remove(const std::string& id, const std::vector<Entry>& entries) {
  if (snapshots_.erase(id) == 0) return;
  std::set<std::string_view> seen;
  for (const Entry& e : entries) {
    if (e.type != EntryType::kFile || e.hash.empty() || !seen.insert(e.hash).second) continue;
    auto it = objects_.find(e.hash);
    if (it == objects_.end()) continue;
    if (--it->second.count == 0) {
      bytes_ -= it->second.bytes;
      objects_.erase(it);
    }
  }
}

common::Status StoreRefs::save(const std::string& ws_dir) const {
  std::string out(kMagic);
  out += fmt::format("bytes {}\nsnapshots {}\n", bytes_, snapshots_.size());
  for (const auto& id : snapshots_) out += id + "\n";
  for (const auto& [hash, ref] : objects_) out += fmt::format("{} {} {}\n", hash, ref.bytes, ref.count);
  common::UniqueFd dir(::open(ws_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) return errno_error("open " + ws_dir, errno);
  return replace_file(dir.get(), "refs", out);
}

uint64_t manifest_bytes(const std::string& ws_dir, const std::set<std::string>& except) {
  uint64_t total = 0;
  for (const auto& id : snapshot_ids(ws_dir)) {
    struct stat st {};
    if (except.count(id) == 0 && ::stat((ws_dir + "/snapshots/" + id).c_str(), &st) == 0)
      total += charged_bytes(static_cast<uint64_t>(st.st_size));
  }
  return total;
}

namespace {

// One workspace's charge, from its refs file's "bytes" line, or, without one, its manifests' byte
// counts summed (each manifest header's total: more than the distinct objects they share).
uint64_t workspace_bytes(const std::string& ws_dir) {
  uint64_t objects = 0;
  common::UniqueFd fd(::open((ws_dir + "/refs").c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  char buf[64];
  ssize_t n = fd ? ::pread(fd.get(), buf, sizeof buf, 0) : -1;
  std::string_view head(buf, n > 0 ? static_cast<size_t>(n) : 0);
  size_t nl = head.find('\n', kMagic.size());
  if (head.starts_with(kMagic) && nl != std::string_view::npos &&
      head.substr(kMagic.size()).starts_with("bytes ") &&
      parse_num(head.substr(kMagic.size() + 6, nl - kMagic.size() - 6), objects)) {
    return objects + manifest_bytes(ws_dir);
  }
  for (const auto& id : snapshot_ids(ws_dir)) {
    common::UniqueFd m(::open((ws_dir + "/snapshots/" + id).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    char mbuf[4096];
    ssize_t got = m ? ::pread(m.get(), mbuf, sizeof mbuf, 0) : -1;
    if (got <= 0) continue;
    if (auto header = parse_manifest_header(std::string_view(mbuf, static_cast<size_t>(got))); header)
      objects += header->total_bytes;
  }
  return objects + manifest_bytes(ws_dir);
}

// What an owner's published artifacts hold: each artifact's object (<pins>/artifact/<owner>/<id>), in
// whole blocks, once per artifact. owner_dir = <data>/workspaces/<owner>; the objects are in store
// (with --store-dir not under the data dir: reading <data>/store charged them nothing).
uint64_t artifact_bytes(const std::string& owner_dir, const ObjectStore& store, const PinsDir& pins_at) {
  const size_t owner_slash = owner_dir.rfind('/');
  if (owner_slash == std::string::npos) return 0;
  const std::string owner = owner_dir.substr(owner_slash + 1);
  const Pins pins(pins_at);
  auto ids = pins.names("artifact", owner);
  if (!ids) return 0;
  uint64_t total = 0;
  for (const auto& id : *ids) {
    auto hashes = pins.read("artifact", owner, id);
    if (!hashes) continue;
    for (const auto& h : *hashes) {
      struct stat st {};
      if (::fstatat(store.objects_fd(), ObjectStore::relative_path(h).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)
        total += charged_bytes(static_cast<uint64_t>(st.st_size));
    }
  }
  return total;
}

}  // namespace

uint64_t other_workspaces_bytes(const std::string& ws_dir, const ObjectStore& store, const PinsDir& pins) {
  std::string dir = ws_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const size_t slash = dir.rfind('/');
  if (slash == std::string::npos) return 0;
  const std::string owner_dir = dir.substr(0, slash), self = dir.substr(slash + 1);
  uint64_t total = 0;
  if (auto names = list_dir_at(AT_FDCWD, owner_dir); names) {
    for (const auto& n : *names) {
      if (n != self && validate_name(n)) total += workspace_bytes(owner_dir + "/" + n);
    }
  }
  return total + artifact_bytes(owner_dir, store, pins);
}

uint64_t owner_store_bytes(const std::string& owner_dir, const ObjectStore& store, const PinsDir& pins) {
  uint64_t total = 0;
  if (auto names = list_dir_at(AT_FDCWD, owner_dir); names) {
    for (const auto& n : *names) {
      if (validate_name(n)) total += workspace_bytes(owner_dir + "/" + n);
    }
  }
  return total + artifact_bytes(owner_dir, store, pins);
}

}  // namespace cellgate::workspace
