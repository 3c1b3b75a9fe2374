// SPDX-License-Identifier: BSD-3-Clause
// crash tests: a snapshot killed mid-way (fault hook + _exit in a child) leaves the store intact.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "test_util.h"
#include "workspace/fsck.h"
#include "workspace/gc.h"
#include "workspace/workspace_manager.h"

using namespace cellgate::workspace;
using test::TempDir;

namespace {

void check_crash_at(FaultPoint point, size_t at_count) {
  TempDir tmp;
  auto mgr = WorkspaceManager::open(tmp.path() + "/data", {});
  REQUIRE(mgr);
  auto ws = (*mgr)->create({"alice", "w"});
  REQUIRE(ws);
  for (int i = 0; i < 5; ++i) test::write_text(ws->tree_path() + "/f" + std::to_string(i), "v1-" + std::to_string(i));
  auto s1 = ws->snapshot({});
  REQUIRE(s1);
  for (int i = 0; i < 5; ++i) test::write_text(ws->tree_path() + "/f" + std::to_string(i), "v2-" + std::to_string(i));

  int code = test::run_in_child([&] {
    Workspace child_ws = *ws;
    child_ws.set_fault_hook([&](FaultPoint p, size_t n) {
      if (p == point && (point != FaultPoint::kObjectWritten || n == at_count)) ::_exit(42);
    });
    (void)child_ws.snapshot({});
    return 0;  // the hook did not fire
  }, 30);
  REQUIRE(code == 42);

  // The previous state is intact and nothing is half-visible.
  auto list = ws->list_snapshots();
  REQUIRE(list);
  REQUIRE(list->size() == 1);
  CHECK((*list)[0].id == s1->id);
  auto report = fsck((*mgr)->store(), (*mgr)->data_dir());
  REQUIRE(report);
  CHECK(report->clean());
  auto restored_view = ws->load_snapshot(s1->id);
  REQUIRE(restored_view);
  CHECK(restored_view->entries.size() == 5);

  // A retry works, and GC cleans whatever the crash left behind.
  auto retry = ws->snapshot({});
  REQUIRE(retry);
  CHECK(retry->created);
  CHECK(retry->diff.changed.size() == 5);
  CHECK(ws->list_snapshots()->size() == 2);
  auto leftovers = list_dir_at(AT_FDCWD, ws->dir() + "/snapshots");
  REQUIRE(leftovers);
  CHECK(leftovers->size() == 2);  // the two manifests, no temp
  auto gc = collect_garbage((*mgr)->store(), {(*mgr)->data_dir()});
  REQUIRE(gc);
  CHECK(gc->objects_kept == 10);
  if (point == FaultPoint::kObjectWritten) CHECK(gc->temps_removed == 2);
  auto after = fsck((*mgr)->store(), (*mgr)->data_dir());
  REQUIRE(after);
  CHECK(after->clean());
  CHECK(after->manifests_checked == 2);
  REQUIRE(ws->restore(s1->id));
  CHECK(test::read_text(ws->tree_path() + "/f3") == "v1-3");
}

}  // namespace

TEST_CASE("crash after some object writes leaves the previous snapshot intact", "[workspace]") {
  check_crash_at(FaultPoint::kObjectWritten, 2);
}

TEST_CASE("crash just before the manifest rename publishes nothing", "[workspace]") {
  check_crash_at(FaultPoint::kBeforeManifestRename, 0);
}

TEST_CASE("a restore killed at any point converges when retried", "[workspace]") {
  TempDir tmp(test::fast_base());
  auto mgr = WorkspaceManager::open(tmp.path() + "/data", {});
  REQUIRE(mgr);
  auto ws = (*mgr)->create({"alice", "w"});
  REQUIRE(ws);
  const std::string t = ws->tree_path();
  for (int i = 0; i < 1500; ++i) test::write_text(t + "/f" + std::to_string(i), "old " + std::to_string(i));
  auto s1 = ws->snapshot({});
  REQUIRE(s1);
  for (int i = 0; i < 1500; ++i) test::write_text(t + "/f" + std::to_string(i), "new " + std::to_string(i));
  for (int i = 0; i < 500; ++i) test::write_text(t + "/extra" + std::to_string(i), "x");
  for (int delay_us : {0, 2000, 10000}) {
    pid_t pid = ::fork();
    if (pid == 0) {
      Workspace child = *ws;
      (void)child.restore(s1->id);
      ::_exit(0);
    }
    ::usleep(static_cast<useconds_t>(delay_us));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
  // Whatever state the kills left (half-restored files, temps), a retry makes it exact.
  REQUIRE(ws->restore(s1->id));
  auto check = ws->snapshot({});
  REQUIRE(check);
  CHECK_FALSE(check->created);
  CHECK(check->diff.empty());
  CHECK(list_dir_at(AT_FDCWD, t)->size() == 1500);
  CHECK(test::read_text(t + "/f777") == "old 777");
}
