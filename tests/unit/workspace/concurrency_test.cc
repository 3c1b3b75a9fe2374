// SPDX-License-Identifier: BSD-3-Clause
// concurrency and ownership tests: parallel snapshots and GC, uid/gid through snapshot and restore.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"
#include "workspace/file_api.h"
#include "workspace/fsck.h"
#include "workspace/gc.h"
#include "workspace/manifest.h"
#include "workspace/tar_writer.h"
#include "workspace/workspace_manager.h"

using namespace cellgate::workspace;
using cellgate::common::Errc;
using test::TempDir;

TEST_CASE("parallel snapshots of shared and separate workspaces with GC running", "[workspace]") {
  TempDir tmp;
  WorkspaceConfig config;
  config.keep_auto = 3;
  auto mgr = WorkspaceManager::open(tmp.path() + "/data", config);
  REQUIRE(mgr);
  for (const char* n : {"a", "b"}) REQUIRE((*mgr)->create({"alice", n}));
  std::atomic<int> failures{0};
  auto worker = [&](const std::string& name, int id) {
    auto ws = (*mgr)->open({"alice", name});
    if (!ws) {
      ++failures;
      return;
    }
    for (int i = 0; i < 15; ++i) {
      test::write_text(ws->tree_path() + "/w" + std::to_string(id), "round " + std::to_string(i));
      test::write_text(ws->tree_path() + "/shared", "same bytes everywhere");
      if (!ws->snapshot({})) ++failures;
    }
  };
  std::vector<std::thread> threads;
  threads.emplace_back(worker, "a", 1);
  threads.emplace_back(worker, "a", 2);  // two kernels sharing one workspace
  threads.emplace_back(worker, "b", 3);
  threads.emplace_back([&] {
    for (int i = 0; i < 10; ++i) {
      if (!collect_garbage((*mgr)->store(), {(*mgr)->data_dir()})) ++failures;
    }
  });
  for (auto& t : threads) t.join();
  CHECK(failures == 0);
  auto report = fsck((*mgr)->store(), (*mgr)->data_dir());
  REQUIRE(report);
  CHECK(report->clean());
  for (const char* n : {"a", "b"}) {
    auto ws = (*mgr)->open({"alice", n});
    auto list = ws->list_snapshots();
    REQUIRE(list);
    CHECK(list->size() <= 3);
    for (const auto& s : *list) CHECK(ws->load_snapshot(s.id));
  }
}

TEST_CASE("ownership survives snapshot and restore, file API inherits the parent's owner", "[workspace]") {
  if (::geteuid() != 0) {
    WARN("not root: ownership case not exercised");
    return;
  }
  TempDir tmp;
  WorkspaceConfig config;
  config.tree_uid = 1000;
  config.tree_gid = 1000;
  auto mgr = WorkspaceManager::open(tmp.path() + "/data", config);
  REQUIRE(mgr);
  auto ws = (*mgr)->create({"alice", "w"});
  REQUIRE(ws);
  const std::string t = ws->tree_path();
  struct stat st {};
  REQUIRE(::stat(t.c_str(), &st) == 0);
  CHECK(st.st_uid == 1000);
  FileApi api(t);
  REQUIRE(api.write_file("up.txt", "uploaded"));
  REQUIRE(::stat((t + "/up.txt").c_str(), &st) == 0);
  CHECK(st.st_uid == 1000);
  CHECK(st.st_gid == 1000);
  test::write_text(t + "/mine", "x");
  REQUIRE(::chown((t + "/mine").c_str(), 2345, 3456) == 0);
  auto s = ws->snapshot({});
  REQUIRE(s);
  REQUIRE(::unlink((t + "/mine").c_str()) == 0);
  REQUIRE(ws->restore(s->id));
  REQUIRE(::stat((t + "/mine").c_str(), &st) == 0);
  CHECK(st.st_uid == 2345);
  CHECK(st.st_gid == 3456);
  REQUIRE(::stat(t.c_str(), &st) == 0);
  CHECK(st.st_uid == 1000);
}

TEST_CASE("in-memory tar is bounded", "[workspace]") {
  TempDir tmp;
  auto mgr = WorkspaceManager::open(tmp.path() + "/data", {});
  REQUIRE(mgr);
  auto ws = (*mgr)->create({"alice", "w"});
  REQUIRE(ws);
  test::write_text(ws->tree_path() + "/f", std::string(10'000, 'x'));
  auto s = ws->snapshot({});
  REQUIRE(s);
  auto m = ws->load_snapshot(s->id);
  REQUIRE(m);
  auto small = tar_to_string((*mgr)->store(), *m, 4096);
  REQUIRE_FALSE(small);
  CHECK(small.error().code == Errc::kTooLarge);
  auto whole = tar_to_string((*mgr)->store(), *m, 1 << 20);
  REQUIRE(whole);
  CHECK(whole->size() % 512 == 0);
  CHECK(whole->size() == 512 + 10'240 + 1024);  // header, padded data, end blocks
}

TEST_CASE("manifest parser survives random damage", "[workspace]") {
  Manifest m;
  m.id = "00000001-00000000";
  for (int i = 0; i < 20; ++i) {
    Entry e;
    e.path = "f" + std::to_string(100 + i);
    e.hash = std::string(64, 'a');
    m.entries.push_back(e);
  }
  const std::string text = serialize_manifest(m);
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string t = text;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) t[rng() % t.size()] = static_cast<char>(rng());
    if (rng() % 3 == 0) t.resize(rng() % t.size());
    auto p = parse_manifest(t);
    if (t != text) CHECK_FALSE(p);  // the checksum catches every change
  }
}
