// SPDX-License-Identifier: BSD-3-Clause
// change_watch_test: every kind of change under a walked tree is seen; a quiet tree reads unchanged.
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <thread>

#include <catch2/catch.hpp>

#include "test_util.h"
#include "workspace/change_watch.h"

using cellgate::workspace::ChangeWatch;
using cellgate::workspace::test::TempDir;
using cellgate::workspace::test::write_text;

namespace {

// A tree walked once, with a/b/ nested and a file in each.
struct Walked {
  TempDir dir;
  ChangeWatch watch{std::chrono::hours(1)};
  std::string root = dir.path();
  Walked() {
    ::mkdir((root + "/a").c_str(), 0755);
    ::mkdir((root + "/a/b").c_str(), 0755);
    write_text(root + "/top.txt", "1");
    write_text(root + "/a/b/deep.txt", "1");
    walk();
  }
  void walk() {
    watch.begin_walk(root);
    watch.end_walk(root);
  }
};

}  // namespace

TEST_CASE("an unknown tree reads as changed until walked, then unchanged while quiet") {
  Walked w;
  ChangeWatch fresh;
  CHECK(fresh.maybe_changed(w.root));
  CHECK_FALSE(w.watch.maybe_changed(w.root));
  CHECK(w.watch.watched_dirs(w.root) == 3);
  // Reading a file is not a change.
  CHECK(cellgate::workspace::read_file_at(AT_FDCWD, w.root + "/a/b/deep.txt", 100).value() == "1");
  CHECK_FALSE(w.watch.maybe_changed(w.root));
}

TEST_CASE("writes, creations, deletions, renames and chmod anywhere in the tree are changes") {
  auto check = [](const std::function<void(const std::string&)>& change) {
    Walked w;
    REQUIRE_FALSE(w.watch.maybe_changed(w.root));
    change(w.root);
    CHECK(w.watch.maybe_changed(w.root));
    w.walk();
    CHECK_FALSE(w.watch.maybe_changed(w.root));
  };
  check([](const std::string& r) { write_text(r + "/a/b/deep.txt", "2"); });
  check([](const std::string& r) { write_text(r + "/a/new.txt", "x"); });
  check([](const std::string& r) { ::unlink((r + "/top.txt").c_str()); });
  check([](const std::string& r) { ::rename((r + "/a/b/deep.txt").c_str(), (r + "/moved.txt").c_str()); });
  check([](const std::string& r) { ::chmod((r + "/a/b/deep.txt").c_str(), 0600); });
  check([](const std::string& r) {
    ::unlink((r + "/a/b/deep.txt").c_str());
    ::rmdir((r + "/a/b").c_str());
  });
  check([](const std::string& r) { ::symlink("/etc", (r + "/a/link").c_str()); });
}

TEST_CASE("directories created after the walk are watched, with what was made inside them") {
  Walked w;
  ::mkdir((w.root + "/n").c_str(), 0755);
  ::mkdir((w.root + "/n/m").c_str(), 0755);  // before the watch on n/ can exist
  CHECK(w.watch.maybe_changed(w.root));      // drains: n/ and n/m/ are watched now
  w.walk();
  CHECK(w.watch.watched_dirs(w.root) == 5);
  CHECK_FALSE(w.watch.maybe_changed(w.root));
  write_text(w.root + "/n/m/late.txt", "x");
  CHECK(w.watch.maybe_changed(w.root));
}

TEST_CASE("while a walk is in progress the head is not the tree yet") {
  Walked w;
  w.watch.begin_walk(w.root);
  CHECK(w.watch.maybe_changed(w.root));
  w.watch.end_walk(w.root);
  CHECK_FALSE(w.watch.maybe_changed(w.root));
}

TEST_CASE("invalidate: a failed walk is walked again") {
  Walked w;
  w.watch.invalidate(w.root);
  CHECK(w.watch.maybe_changed(w.root));
}

TEST_CASE("a tree with more directories than the cap is always walked") {
  TempDir dir;
  for (int i = 0; i < 5; ++i) ::mkdir((dir.path() + "/d" + std::to_string(i)).c_str(), 0755);
  ChangeWatch watch(std::chrono::hours(1), 4);
  watch.begin_walk(dir.path());
  watch.end_walk(dir.path());
  CHECK(watch.maybe_changed(dir.path()));
}

TEST_CASE("past the total cap (a share of the host's inotify watches) trees are walked every time") {
  TempDir a, b;
  ::mkdir((a.path() + "/d").c_str(), 0755);
  ChangeWatch watch(std::chrono::hours(1), 4096, 3);
  watch.begin_walk(a.path());
  watch.end_walk(a.path());
  CHECK_FALSE(watch.maybe_changed(a.path()));  // 2 of 3 watches
  ::mkdir((b.path() + "/d").c_str(), 0755);
  watch.begin_walk(b.path());
  watch.end_walk(b.path());
  CHECK(watch.maybe_changed(b.path()));  // its second directory did not fit
  CHECK(watch.watched_dirs(b.path()) == 1);
}

TEST_CASE("past max_age a quiet tree reads as changed (what inotify cannot see: mmap writes)") {
  TempDir dir;
  write_text(dir.path() + "/m.bin", std::string(4096, '\0'));
  int fd = ::open((dir.path() + "/m.bin").c_str(), O_RDWR | O_CLOEXEC);
  REQUIRE(fd >= 0);
  ChangeWatch watch(std::chrono::milliseconds(50));
  watch.begin_walk(dir.path());
  watch.end_walk(dir.path());
  void* p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  REQUIRE(p != MAP_FAILED);
  static_cast<char*>(p)[0] = 'x';
  CHECK_FALSE(watch.maybe_changed(dir.path()));
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  CHECK(watch.maybe_changed(dir.path()));
  ::munmap(p, 4096);
  ::close(fd);
}

TEST_CASE("a removed root reads as changed; forget stops watching") {
  Walked w;
  ::rename(w.root.c_str(), (w.root + ".gone").c_str());
  ::mkdir(w.root.c_str(), 0755);
  CHECK(w.watch.maybe_changed(w.root));  // the old tree moved away: its root watch saw IN_MOVE_SELF
  ::rmdir(w.root.c_str());
  ::rename((w.root + ".gone").c_str(), w.root.c_str());
  w.watch.forget(w.root);
  CHECK(w.watch.watched_dirs(w.root) == 0);
  CHECK(w.watch.maybe_changed(w.root));
}

namespace {

// A workspace directory as the manager lays it out: <ws>/head beside <ws>/tree, the tree walked once.
struct WalkedWorkspace {
  TempDir dir;
  ChangeWatch watch{std::chrono::hours(1)};
  std::string ws = dir.path() + "/ws";
  std::string root = ws + "/tree";
  WalkedWorkspace() {
    ::mkdir(ws.c_str(), 0755);
    ::mkdir(root.c_str(), 0755);
    write_text(root + "/f.txt", "1");
    watch.begin_walk(root);
    watch.end_walk(root);
  }
  // As write_file_atomic replaces it: a new file renamed over the old.
  void write_head(const std::string& id) {
    write_text(ws + "/head.tmp", id);
    ::rename((ws + "/head.tmp").c_str(), (ws + "/head").c_str());
  }
  std::optional<std::string> head() {
    std::optional<std::string> h;
    if (watch.maybe_changed(root, h)) return std::string("(tree changed)");
    return h;
  }
};

}  // namespace

TEST_CASE("a remembered head holds until the workspace directory changes") {
  WalkedWorkspace w;
  CHECK(w.head() == std::nullopt);  // never remembered: the caller reads the head file
  w.write_head("one");
  uint64_t token = w.watch.watch_head(w.root);
  w.watch.remember_head(w.root, token, "one");
  CHECK(w.head() == "one");
  CHECK(w.head() == "one");
  w.write_head("two");  // a snapshot or restore, by this process or another
  CHECK(w.head() == std::nullopt);
  token = w.watch.watch_head(w.root);
  w.watch.remember_head(w.root, token, "two");
  CHECK(w.head() == "two");
  ::unlink((w.ws + "/head").c_str());
  CHECK(w.head() == std::nullopt);
}

TEST_CASE("a head that changed while it was being read is not remembered") {
  WalkedWorkspace w;
  const uint64_t token = w.watch.watch_head(w.root);
  w.write_head("newer");  // after the watch, before remember_head: what was read may be stale
  w.watch.remember_head(w.root, token, "older");
  CHECK(w.head() == std::nullopt);
}

TEST_CASE("a remembered head is forgotten when the workspace is renamed away or the tree changes") {
  WalkedWorkspace w;
  w.watch.remember_head(w.root, w.watch.watch_head(w.root), "one");
  REQUIRE(w.head() == "one");
  write_text(w.root + "/g.txt", "2");
  CHECK(w.head() == "(tree changed)");
  w.watch.begin_walk(w.root);
  w.watch.end_walk(w.root);
  CHECK(w.head() == "one");  // a walk that found the same tree: the head file was not touched
  ::rename(w.ws.c_str(), (w.ws + ".removed").c_str());  // WorkspaceManager::remove renames it first
  std::optional<std::string> h;
  w.watch.maybe_changed(w.root, h);
  CHECK(h == std::nullopt);
}
