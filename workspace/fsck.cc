// SPDX-License-Identifier: BSD-3-Clause
// fsck: verifies every object (rehash) and every manifest (well-formed, all objects present).
#include "workspace/fsck.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <fmt/core.h>

#include "workspace/io_util.h"
#include "workspace/layout.h"
#include "workspace/manifest.h"
#include "workspace/sha256.h"

namespace cellgate::workspace {

using common::Errc;

common::Result<FsckReport> fsck(const ObjectStore& store, const std::string& data_dir,
                                const common::ProgressFn& progress) {
  auto lock = store.lock(FileLock::Mode::kShared);
  if (!lock) return lock.error();
  FsckReport report;
  std::vector<std::pair<std::string, uint64_t>> objects;
  auto st = store.for_each_object([&](const std::string& hash, uint64_t size) { objects.emplace_back(hash, size); });
  if (!st) return st.error();
  uint64_t bytes = 0;
  for (const auto& [hash, size] : objects) {
    ++report.objects_checked;
    bytes += size;
    if (progress) progress({"objects", report.objects_checked, objects.size(), bytes});
    if (!is_sha256_hex(hash)) {
      report.problems.push_back(fmt::format("stray file in object store: {:?}", hash));
      continue;
    }
    auto actual = store.rehash(hash);
    if (!actual) {
      report.problems.push_back(fmt::format("object {} unreadable: {}", hash, actual.error().message));
    } else if (*actual != hash) {
      report.problems.push_back(fmt::format("object {} is corrupt (content hashes to {})", hash, *actual));
    }
  }
  auto refs = enumerate_manifests(data_dir);
  if (!refs) return refs.error();
  for (const auto& r : *refs) {
    std::string where = fmt::format("{}/snapshots/{}", r.workspace_dir, r.id);
    auto text = read_file_at(AT_FDCWD, where, uint64_t{1} << 30);
    if (!text && text.error().code == Errc::kNotFound) continue;
    ++report.manifests_checked;
    if (progress) progress({"manifests", report.manifests_checked, refs->size(), 0});
    if (!text) {
      report.problems.push_back(fmt::format("manifest {} unreadable: {}", where, text.error().message));
      continue;
    }
    auto m = parse_manifest(*text);
    if (!m) {
      report.problems.push_back(fmt::format("manifest {}: {}", where, m.error().message));
      continue;
    }
    if (m->id != r.id) report.problems.push_back(fmt::format("manifest {} names itself {:?}", where, m->id));
    for (const auto& e : m->entries) {
      if (e.type != EntryType::kFile) continue;
      struct stat sb {};
      std::string rel = ObjectStore::relative_path(e.hash);
      if (::fstatat(store.objects_fd(), rel.c_str(), &sb, AT_SYMLINK_NOFOLLOW) != 0) {
        report.problems.push_back(fmt::format("manifest {}: object {} missing (for {:?})", where, e.hash, e.path));
      } else if (!e.sparse && static_cast<uint64_t>(sb.st_size) != e.size) {  // a sparse object holds less
        report.problems.push_back(fmt::format("manifest {}: object {} has size {} but {:?} says {}", where,
                                              e.hash, sb.st_size, e.path, e.size));
      }
    }
  }
  return report;
}

}  // namespace cellgate::workspace
