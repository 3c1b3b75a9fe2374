// SPDX-License-Identifier: BSD-3-Clause
// sparse files (stored as their extents) and the owner's store quota (store_usage.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "test_util.h"
#include "workspace/manifest.h"
#include "workspace/pins.h"
#include "workspace/store_usage.h"
#include "workspace/workspace_manager.h"

using namespace cellgate::workspace;
using cellgate::common::Errc;
using cellgate::workspace::test::TempDir;

namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

// A file of `size` bytes holding only `data` at `offset` (the rest a hole).
void write_sparse_file(const std::string& path, uint64_t size, uint64_t offset, const std::string& data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::pwrite(fd, data.data(), data.size(), static_cast<off_t>(offset)) == static_cast<ssize_t>(data.size()));
  REQUIRE(::ftruncate(fd, static_cast<off_t>(size)) == 0);
  ::close(fd);
}

uint64_t allocated(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

uint64_t store_allocated(const std::string& data_dir) {
  uint64_t total = 0;
  for (int i = 0; i < 256; ++i) {
    char name[3];
    std::snprintf(name, sizeof name, "%02x", i);
    auto entries = list_dir_at(AT_FDCWD, data_dir + "/store/objects/" + name);
    if (!entries) continue;
    for (const auto& e : *entries) total += allocated(data_dir + "/store/objects/" + name + "/" + e);
  }
  return total;
}

}  // namespace

TEST_CASE("a sparse file is stored as what it holds and restored with its holes", "[workspace][sparse]") {
  TempDir tmp;
  auto mgr = WorkspaceManager::open(tmp.path() + "/data", {});
  REQUIRE(mgr);
  auto ws = (*mgr)->create({"u", "w"});
  REQUIRE(ws);
  const std::string file = ws->tree_path() + "/sparse.bin";
  write_sparse_file(file, kGiB, kGiB / 2, "hello");
  if (allocated(file) > (1 << 20)) {
    WARN("this file system does not keep holes: nothing to check");
    return;
  }
  auto snap = ws->snapshot({});
  REQUIRE(snap);
  CHECK(snap->bytes_hashed < (1 << 20));
  CHECK(store_allocated(tmp.path() + "/data") < (1 << 20));
  auto m = ws->load_snapshot(snap->id);
  REQUIRE(m);
  REQUIRE(m->entries.size() == 1);
  CHECK(m->entries[0].sparse);
  CHECK(m->entries[0].size == kGiB);
  // The manifest text round-trips the mark; a second snapshot reuses the cached hash.
  auto again = parse_manifest(serialize_manifest(*m));
  REQUIRE(again);
  CHECK(again->entries[0].sparse);

  // Restored: the same bytes, the holes still holes.
  REQUIRE(::unlink(file.c_str()) == 0);
  REQUIRE(ws->restore(snap->id));
  struct stat st {};
  REQUIRE(::stat(file.c_str(), &st) == 0);
  CHECK(static_cast<uint64_t>(st.st_size) == kGiB);
  CHECK(allocated(file) < (1 << 20));
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  char buf[8] = {};
  REQUIRE(::pread(fd, buf, 5, static_cast<off_t>(kGiB / 2)) == 5);
  CHECK(std::string(buf) == "hello");
  REQUIRE(::pread(fd, buf, 1, 4096) == 1);
  CHECK(buf[0] == '\0');
  ::close(fd);
  // An unchanged sparse file is not restored again (its hash is taken the same way).
  auto noop = ws->restore(snap->id);
  REQUIRE(noop);
  CHECK(noop->files_written == 0);
}

TEST_CASE("the owner's store quota holds for snapshots, forks and frees on delete", "[workspace][quota]") {
  TempDir tmp;
  WorkspaceConfig config;
  config.store_bytes = 3 << 20;
  auto mgr = WorkspaceManager::open(tmp.path() + "/data", config);
  REQUIRE(mgr);
  auto ws = (*mgr)->create({"u", "w"});
  REQUIRE(ws);
  auto content = [](char c) { return std::string(1 << 20, c); };
  SnapshotOptions labelled{false, "keep", false};
  std::vector<std::string> ids;
  for (char c : {'a', 'b'}) {
    cellgate::workspace::test::write_text(ws->tree_path() + "/f", content(c));
    auto s = ws->snapshot(labelled);
    REQUIRE(s);
    ids.push_back(s->id);
  }
  // Two distinct MiB are held; a third does not fit beside them with its manifest.
  cellgate::workspace::test::write_text(ws->tree_path() + "/f", content('c'));
  auto refused = ws->snapshot(labelled);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == Errc::kInsufficientStorage);
  CHECK(refused.error().message.find("store_bytes") != std::string::npos);
  auto listed = ws->list_snapshots();
  REQUIRE(listed);
  CHECK(listed->size() == 2);  // nothing half-made

  // Content seen before costs nothing more: the workspace holds each object once.
  cellgate::workspace::test::write_text(ws->tree_path() + "/f", content('a'));
  CHECK(ws->snapshot(labelled));

  // A fork holds the snapshot's objects again: refused, since it would double them.
  auto fork = (*mgr)->fork({"u", "w"}, ids[0], {"u", "w2"});
  REQUIRE_FALSE(fork);
  CHECK(fork.error().code == Errc::kInsufficientStorage);
  CHECK_FALSE(cellgate::workspace::test::exists(tmp.path() + "/data/workspaces/u/w2"));

  // Deleting frees at once.
  auto all = ws->list_snapshots();
  REQUIRE(all);
  for (const auto& s : *all) REQUIRE(ws->delete_snapshot(s.id));
  cellgate::workspace::test::write_text(ws->tree_path() + "/f", content('c'));
  CHECK(ws->snapshot(labelled));

  // Another owner's usage is their own.
  auto theirs = (*mgr)->create({"v", "w"});
  REQUIRE(theirs);
  cellgate::workspace::test::write_text(theirs->tree_path() + "/f", content('c'));
  CHECK(theirs->snapshot(labelled));
}

TEST_CASE("store refs are rebuilt from the manifests when they do not match them", "[workspace][quota]") {
  TempDir tmp;
  WorkspaceConfig config;
  config.store_bytes = 64 << 20;
  auto mgr = WorkspaceManager::open(tmp.path() + "/data", config);
  REQUIRE(mgr);
  auto ws = (*mgr)->create({"u", "w"});
  REQUIRE(ws);
  cellgate::workspace::test::write_text(ws->tree_path() + "/f", std::string(10000, 'x'));
  auto s = ws->snapshot({false, "x", false});
  REQUIRE(s);
  auto cost = [&](const std::string&) { return uint64_t{12288}; };
  auto refs = StoreRefs::load(ws->dir(), cost);
  REQUIRE(refs);
  CHECK(refs->object_bytes() == 12288);  // 10000 bytes: three 4 KiB blocks
  // A damaged refs file is only a cache.
  cellgate::workspace::test::write_text(ws->dir() + "/refs", "garbage");
  auto rebuilt = StoreRefs::load(ws->dir(), cost);
  REQUIRE(rebuilt);
  CHECK(rebuilt->snapshots().count(s->id) == 1);
  CHECK(rebuilt->object_bytes() == 12288);
}

TEST_CASE("published artifacts count against the owner's store quota until their pin goes", "[workspace][quota]") {
  TempDir tmp;
  WorkspaceConfig config;
  config.store_bytes = 3 << 20;
  auto mgr = WorkspaceManager::open(tmp.path() + "/data", config);
  REQUIRE(mgr);
  auto ws = (*mgr)->create({"u", "w"});
  REQUIRE(ws);
  // Two MiB held by an artifact (an object pinned under pins/artifact/u), as gateway/artifact_store does.
  ObjectBatch batch((*mgr)->store());
  auto hash = batch.put_bytes(std::string(2 << 20, 'x'));
  REQUIRE(hash);
  Pins pins((*mgr)->pins());
  REQUIRE(pins.add("artifact", "u", "a1", {hash.value()}));
  REQUIRE(batch.commit());
  const std::string owner_dir = tmp.path() + "/data/workspaces/u";
  CHECK(owner_store_bytes(owner_dir, (*mgr)->store(), (*mgr)->pins()) == (2u << 20));
  CHECK(owner_store_bytes(tmp.path() + "/data/workspaces/other", (*mgr)->store(), (*mgr)->pins()) == 0);  // another owner pays nothing

  // A snapshot of 1.5 MiB no longer fits beside it; it does once the artifact is deleted.
  cellgate::workspace::test::write_text(ws->tree_path() + "/f", std::string(3 << 19, 'y'));
  SnapshotOptions labelled{false, "keep", false};
  auto refused = ws->snapshot(labelled);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == Errc::kInsufficientStorage);
  REQUIRE(pins.remove("artifact", "u", "a1"));
  CHECK(owner_store_bytes(owner_dir, (*mgr)->store(), (*mgr)->pins()) == 0);
  CHECK(ws->snapshot(labelled));
}

TEST_CASE("with --store-dir, published artifacts count against the owner's store quota", "[workspace][quota][cluster]") {
  // The quota read the artifacts' objects under <data>/store: with the store elsewhere they cost nothing.
  TempDir tmp;
  WorkspaceConfig config;
  config.store_bytes = 3 << 20;
  config.store_dir = tmp.path() + "/shared-store";
  auto mgr = WorkspaceManager::open(tmp.path() + "/data", config);
  REQUIRE(mgr);
  auto ws = (*mgr)->create({"u", "w"});
  REQUIRE(ws);
  ObjectBatch batch((*mgr)->store());
  auto hash = batch.put_bytes(std::string(2 << 20, 'x'));
  REQUIRE(hash);
  Pins pins((*mgr)->pins());
  REQUIRE(pins.add("artifact", "u", "a1", {hash.value()}));
  REQUIRE(batch.commit());
  cellgate::workspace::test::write_text(ws->tree_path() + "/f", std::string(3 << 19, 'y'));
  SnapshotOptions labelled{false, "keep", false};
  auto refused = ws->snapshot(labelled);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == Errc::kInsufficientStorage);
  CHECK(owner_store_bytes(tmp.path() + "/data/workspaces/u", (*mgr)->store(), (*mgr)->pins()) == (2u << 20));
  REQUIRE(pins.remove("artifact", "u", "a1"));
  CHECK(ws->snapshot(labelled));
}
