// SPDX-License-Identifier: BSD-3-Clause
// two_nodes: two cluster nodes (two data dirs) sharing one store (--store-dir), for the tests of what a
// shared store promises (published manifests, gc across nodes), and the steps those tests repeat.
#pragma once

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include <chrono>
#include <memory>
#include <string>

#include "test_util.h"
#include "workspace/gc.h"
#include "workspace/object_store.h"
#include "workspace/workspace_manager.h"

namespace cellgate::workspace::test {

struct TwoNodes {
  TempDir tmp;
  std::unique_ptr<WorkspaceManager> a, b;
  explicit TwoNodes(WorkspaceConfig config = {}) {
    config.store_dir = store();
    auto ma = WorkspaceManager::open(tmp.path() + "/node-a", config);
    auto mb = WorkspaceManager::open(tmp.path() + "/node-b", config);
    REQUIRE(ma);
    REQUIRE(mb);
    a = std::move(ma.value());
    b = std::move(mb.value());
  }
  std::string store() const { return tmp.path() + "/shared-store"; }
  // Where alice's workspace ws has its snapshots published.
  std::string published(const std::string& ws) const { return store() + "/manifests/alice/" + ws; }
  std::string object(const std::string& hash) const { return store() + "/objects/" + ObjectStore::relative_path(hash); }
  // gc run on node b, with the age rule at age.
  GcResult gc_on_b(std::chrono::seconds age = std::chrono::seconds(0)) {
    auto r = collect_garbage(b->store(), GcOptions{b->data_dir(), true, age});
    REQUIRE(r);
    return r.value();
  }
};

// A snapshot that was taken (the tree had changed): its id.
inline std::string snap(Workspace& ws) {
  auto r = ws.snapshot({});
  REQUIRE(r);
  REQUIRE(r->created);
  return r->id;
}

// Sets path's times to seconds ago.
inline void age(const std::string& path, int seconds) {
  timespec times[2];
  ::clock_gettime(CLOCK_REALTIME, &times[0]);
  times[0].tv_sec -= seconds;
  times[1] = times[0];
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW) == 0);
}

inline time_t mtime(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mtime;
}

}  // namespace cellgate::workspace::test
