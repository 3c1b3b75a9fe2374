// SPDX-License-Identifier: BSD-3-Clause
// snapshot tests: dedup, incremental hashing, change detection, restore, fork, diff, retention, GC, fsck, tar.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli/store.h"
#include "test_util.h"
#include "workspace/fsck.h"
#include "workspace/gc.h"
#include "workspace/layout.h"
#include "workspace/workspace_manager.h"

using namespace cellgate::workspace;
using cellgate::common::Errc;
using test::TempDir;

namespace {

std::unique_ptr<WorkspaceManager> make_manager(const TempDir& tmp, WorkspaceConfig config = {}) {
  auto m = WorkspaceManager::open(tmp.path() + "/data", config);
  REQUIRE(m);
  return std::move(m.value());
}

Workspace make_ws(WorkspaceManager& mgr, const std::string& name) {
  auto ws = mgr.create({"alice", name});
  REQUIRE(ws);
  return std::move(ws.value());
}

size_t count_objects(const ObjectStore& store) {
  size_t n = 0;
  REQUIRE(store.for_each_object([&](const std::string&, uint64_t) { ++n; }));
  return n;
}

}  // namespace

TEST_CASE("names are validated", "[workspace]") {
  TempDir tmp;
  auto mgr = make_manager(tmp);
  for (const std::string& bad : std::vector<std::string>{"", ".", "..", "a/b", "a b", std::string(65, 'a'), "é", "x\n"}) {
    INFO(bad);
    CHECK(mgr->create({"alice", bad}).error().code == Errc::kBadRequest);
    CHECK(mgr->create({bad, "ws"}).error().code == Errc::kBadRequest);
  }
  CHECK(mgr->create({"alice", "My.ws_1-2"}));
  CHECK(mgr->create({"alice", "My.ws_1-2"}).error().code == Errc::kConflict);
  auto kept = mgr->ensure({"alice", "My.ws_1-2"});
  REQUIRE(kept);
  test::write_text(kept->tree_path() + "/kept.txt", "still here");
  CHECK(mgr->ensure({"alice", "My.ws_1-2"}));
  CHECK(test::read_text(kept->tree_path() + "/kept.txt") == "still here");
  CHECK(mgr->list("alice").value() == std::vector<std::string>{"My.ws_1-2"});
  CHECK(mgr->ensure({"alice", "fresh"}));
  CHECK(mgr->list("alice").value() == std::vector<std::string>{"My.ws_1-2", "fresh"});
  REQUIRE(mgr->remove({"alice", "fresh"}));
  CHECK(mgr->open({"bob", "My.ws_1-2"}).error().code == Errc::kNotFound);
  REQUIRE(mgr->remove({"alice", "My.ws_1-2"}));
  CHECK(mgr->list("alice")->empty());
  CHECK(mgr->remove({"alice", "My.ws_1-2"}).error().code == Errc::kNotFound);
}

TEST_CASE("same content in two workspaces is stored once", "[workspace]") {
  TempDir tmp;
  auto mgr = make_manager(tmp);
  Workspace a = make_ws(*mgr, "a");
  Workspace b = make_ws(*mgr, "b");
  test::write_text(a.tree_path() + "/data.csv", std::string(3 << 20, 'z'));  // streamed path
  test::write_text(a.tree_path() + "/small", "same");
  test::write_text(b.tree_path() + "/copy.csv", std::string(3 << 20, 'z'));
  test::write_text(b.tree_path() + "/other-name", "same");
  auto ra = a.snapshot({});
  REQUIRE(ra);
  CHECK(ra->created);
  CHECK(ra->objects_written == 2);
  auto rb = b.snapshot({});
  REQUIRE(rb);
  CHECK(rb->created);
  CHECK(rb->objects_written == 0);
  CHECK(count_objects(mgr->store()) == 2);
}

TEST_CASE("incremental snapshots re-hash only changed files and report changes", "[workspace]") {
  TempDir tmp;
  auto mgr = make_manager(tmp);
  Workspace ws = make_ws(*mgr, "w");
  ::mkdir((ws.tree_path() + "/d").c_str(), 0755);
  for (int i = 0; i < 20; ++i) test::write_text(ws.tree_path() + "/d/f" + std::to_string(i), "v1 " + std::to_string(i));
  test::settle();
  auto s1 = ws.snapshot({});
  REQUIRE(s1);
  CHECK(s1->created);
  CHECK(s1->files_hashed == 20);
  CHECK(s1->diff.added.size() == 21);

  auto same = ws.snapshot({});
  REQUIRE(same);
  CHECK_FALSE(same->created);
  CHECK(same->id == s1->id);
  CHECK(same->files_hashed == 0);
  CHECK(same->files_reused == 20);
  CHECK(ws.list_snapshots()->size() == 1);

  test::write_text(ws.tree_path() + "/d/f3", "v2");
  test::write_text(ws.tree_path() + "/new", "n");
  ::unlink((ws.tree_path() + "/d/f7").c_str());
  test::settle();
  auto s2 = ws.snapshot({});
  REQUIRE(s2);
  CHECK(s2->created);
  CHECK(s2->files_hashed == 2);
  CHECK(s2->files_reused == 18);
  CHECK(s2->diff.added == std::vector<std::string>{"new"});
  CHECK(s2->diff.removed == std::vector<std::string>{"d/f7"});
  CHECK(s2->diff.changed == std::vector<std::string>{"d/f3"});

  auto list = ws.list_snapshots();
  REQUIRE(list->size() == 2);
  CHECK((*list)[0].id == s1->id);
  CHECK((*list)[1].id == s2->id);
  CHECK((*list)[1].entries == 21);
  auto d = ws.diff(s1->id, s2->id);
  REQUIRE(d);
  CHECK(d->changed == std::vector<std::string>{"d/f3"});
  CHECK(ws.diff(s1->id, "00000099-deadbeef").error().code == Errc::kNotFound);
  CHECK(ws.diff(s1->id, "../../x").error().code == Errc::kNotFound);

  // A damaged index only costs re-hashing.
  test::write_text(ws.dir() + "/index", "garbage");
  auto s3 = ws.snapshot({});
  REQUIRE(s3);
  CHECK_FALSE(s3->created);
  CHECK(s3->files_hashed == 20);
}

TEST_CASE("restore in place brings files back and keeps the root inode", "[workspace]") {
  TempDir tmp;
  auto mgr = make_manager(tmp);
  Workspace ws = make_ws(*mgr, "w");
  const std::string t = ws.tree_path();
  ino_t root_ino = test::inode_of(t);
  ::mkdir((t + "/keep").c_str(), 0750);
  test::write_text(t + "/keep/a", "alpha");
  test::write_text(t + "/b", "beta");
  ::chmod((t + "/b").c_str(), 0600);
  REQUIRE(::symlink("keep/a", (t + "/ln").c_str()) == 0);
  auto s1 = ws.snapshot({.automatic = false, .label = "base", .only_if_changed = true});
  REQUIRE(s1);

  test::write_text(t + "/keep/a", "ALPHA changed");
  ::unlink((t + "/b").c_str());
  ::mkdir((t + "/b").c_str(), 0755);  // a file became a directory
  test::write_text(t + "/b/inner", "x");
  test::write_text(t + "/added", "new");
  ::unlink((t + "/ln").c_str());
  test::write_text(t + "/ln", "not a link");
  REQUIRE(::mkfifo((t + "/fifo").c_str(), 0644) == 0);

  auto r = ws.restore(s1->id);
  REQUIRE(r);
  CHECK(test::inode_of(t) == root_ino);
  CHECK(test::read_text(t + "/keep/a") == "alpha");
  CHECK(test::read_text(t + "/b") == "beta");
  struct stat st {};
  REQUIRE(::stat((t + "/b").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  REQUIRE(::stat((t + "/keep").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0750);
  char target[64] = {};
  REQUIRE(::readlink((t + "/ln").c_str(), target, sizeof(target)) > 0);
  CHECK(std::string(target) == "keep/a");
  CHECK_FALSE(test::exists(t + "/added"));
  CHECK_FALSE(test::exists(t + "/fifo"));
  auto names = list_dir_at(AT_FDCWD, t);
  CHECK(names->size() == 3);  // keep, b, ln — no temps
  CHECK(r->applied.added.size() == 0);  // applied is live → snapshot
  CHECK(r->applied.removed == std::vector<std::string>{"added", "b/inner"});

  // The head is now s1: nothing changed since the restore.
  CHECK(ws.head_id() == s1->id);
  auto after = ws.snapshot({});
  REQUIRE(after);
  CHECK_FALSE(after->created);
  CHECK(ws.restore("00000042-00000000").error().code == Errc::kNotFound);
}

TEST_CASE("fork creates a new workspace from a snapshot", "[workspace]") {
  TempDir tmp;
  auto mgr = make_manager(tmp);
  Workspace ws = make_ws(*mgr, "w");
  test::write_text(ws.tree_path() + "/nb.ipynb", "{}");
  auto s = ws.snapshot({});
  REQUIRE(s);
  test::write_text(ws.tree_path() + "/later", "not in the fork");
  auto f = mgr->fork({"alice", "w"}, s->id, {"bob", "copy"});
  REQUIRE(f);
  CHECK(test::read_text(f->tree_path() + "/nb.ipynb") == "{}");
  CHECK_FALSE(test::exists(f->tree_path() + "/later"));
  auto list = f->list_snapshots();
  REQUIRE(list->size() == 1);
  CHECK((*list)[0].id == s->id);
  CHECK_FALSE(f->snapshot({})->created);
  CHECK(mgr->fork({"alice", "w"}, s->id, {"bob", "copy"}).error().code == Errc::kConflict);
  CHECK(mgr->fork({"alice", "w"}, "00000009-00000000", {"bob", "x"}).error().code == Errc::kNotFound);
}

TEST_CASE("retention keeps the last N automatic plus labelled, GC frees the rest", "[workspace]") {
  TempDir tmp;
  WorkspaceConfig config;
  config.keep_auto = 2;
  auto mgr = make_manager(tmp, config);
  Workspace ws = make_ws(*mgr, "w");
  test::write_text(ws.tree_path() + "/f", "labelled");
  auto labelled = ws.snapshot({.automatic = false, .label = "v1", .only_if_changed = true});
  REQUIRE(labelled);
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    test::write_text(ws.tree_path() + "/f", "auto " + std::to_string(i));
    auto r = ws.snapshot({});
    REQUIRE(r);
    REQUIRE(r->created);
    ids.push_back(r->id);
  }
  auto list = ws.list_snapshots();
  REQUIRE(list->size() == 3);
  CHECK((*list)[0].id == labelled->id);
  CHECK((*list)[0].label == "v1");
  CHECK((*list)[1].id == ids[3]);
  CHECK((*list)[2].id == ids[4]);
  CHECK(count_objects(mgr->store()) == 6);
  auto gc = collect_garbage(mgr->store(), {mgr->data_dir()});
  REQUIRE(gc);
  CHECK(gc->objects_removed == 3);
  CHECK(gc->objects_kept == 3);
  CHECK(count_objects(mgr->store()) == 3);
  auto report = fsck(mgr->store(), mgr->data_dir());
  REQUIRE(report);
  CHECK(report->clean());
  CHECK(ws.restore(labelled->id));
  CHECK(test::read_text(ws.tree_path() + "/f") == "labelled");
  REQUIRE(ws.delete_snapshot(labelled->id));
  CHECK(ws.list_snapshots()->size() == 2);
}

TEST_CASE("fsck catches a corrupted object and a missing one", "[workspace]") {
  TempDir tmp;
  auto mgr = make_manager(tmp);
  Workspace ws = make_ws(*mgr, "w");
  test::write_text(ws.tree_path() + "/a", "some content");
  test::write_text(ws.tree_path() + "/b", "other content");
  REQUIRE(ws.snapshot({}));
  std::ostringstream clean;
  CHECK(cellgate::cli::fsck_main({mgr->data_dir(), ""}, clean) == 0);
  CHECK(clean.str().find("0 problems") != std::string::npos);

  auto m = ws.load_snapshot(ws.list_snapshots()->at(0).id);
  REQUIRE(m);
  std::string obj_a = store_dir(mgr->data_dir()) + "/objects/" + ObjectStore::relative_path(m->entries[0].hash);
  std::string obj_b = store_dir(mgr->data_dir()) + "/objects/" + ObjectStore::relative_path(m->entries[1].hash);
  ::chmod(obj_a.c_str(), 0644);
  std::string bytes = test::read_text(obj_a);
  bytes[0] ^= 0x01;
  test::write_text(obj_a, bytes);
  ::unlink(obj_b.c_str());
  std::ostringstream out;
  CHECK(cellgate::cli::fsck_main({mgr->data_dir(), ""}, out) == 1);
  CHECK(out.str().find("corrupt") != std::string::npos);
  CHECK(out.str().find("missing") != std::string::npos);
  auto report = fsck(mgr->store(), mgr->data_dir());
  REQUIRE(report);
  CHECK(report->problems.size() == 2);
  std::ostringstream none;
  CHECK(cellgate::cli::fsck_main({tmp.path() + "/nowhere", ""}, none) == 2);
}

TEST_CASE("tar of a snapshot is readable by /bin/tar", "[workspace]") {
  TempDir tmp;
  auto mgr = make_manager(tmp);
  Workspace ws = make_ws(*mgr, "w");
  const std::string t = ws.tree_path();
  std::string deep = "dir/" + std::string(120, 'n');  // needs a pax path record
  ::mkdir((t + "/dir").c_str(), 0755);
  test::write_text(t + "/" + deep, "long name");
  test::write_text(t + "/dir/plain.txt", std::string(1000, 'p'));
  REQUIRE(::symlink("plain.txt", (t + "/dir/link").c_str()) == 0);
  // A ~1000-byte path: its pax record length crosses from 3 to 4 digits.
  std::string longest = "dir";
  for (int i = 0; i < 4; ++i) {
    longest += "/" + std::string(240, static_cast<char>('a' + i));
    ::mkdir((t + "/" + longest).c_str(), 0755);
  }
  longest += "/" + std::string(1000 - 7 - longest.size() - 1, 'z');
  test::write_text(t + "/" + longest, "deep");
  auto s = ws.snapshot({});
  REQUIRE(s);
  std::string archive = tmp.path() + "/snap.tar";
  int fd = ::open(archive.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(ws.write_tar(s->id, fd_sink(fd)));
  ::close(fd);
  std::string listing_path = tmp.path() + "/listing";
  std::string cmd = "/bin/tar -tvf " + archive + " > " + listing_path + " 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::string listing = test::read_text(listing_path);
  CHECK(listing.find(std::string(120, 'n')) != std::string::npos);
  CHECK(listing.find("dir/link -> plain.txt") != std::string::npos);
  CHECK(listing.find("1000") != std::string::npos);
  std::string out_dir = tmp.path() + "/x";
  ::mkdir(out_dir.c_str(), 0755);
  REQUIRE(std::system(("/bin/tar -xf " + archive + " -C " + out_dir).c_str()) == 0);
  CHECK(test::read_text(out_dir + "/" + deep) == "long name");
  CHECK(test::read_text(out_dir + "/dir/plain.txt") == std::string(1000, 'p'));
  CHECK(test::read_text(out_dir + "/" + longest) == "deep");
}

TEST_CASE("a snapshot past its time budget fails with kTimeout and publishes nothing", "[workspace]") {
  TempDir tmp;
  WorkspaceConfig config;
  config.snapshot_timeout = std::chrono::seconds(0);
  auto mgr = make_manager(tmp, config);
  Workspace ws = make_ws(*mgr, "w");
  test::write_text(ws.tree_path() + "/f", "x");
  ::usleep(1000);
  auto s = ws.snapshot({});
  REQUIRE_FALSE(s);
  CHECK(s.error().code == Errc::kTimeout);
  CHECK(ws.list_snapshots()->empty());
}

TEST_CASE("restore fixes metadata-only changes without rewriting the file", "[workspace]") {
  TempDir tmp;
  auto mgr = make_manager(tmp);
  Workspace ws = make_ws(*mgr, "w");
  const std::string f = ws.tree_path() + "/script.py";
  test::write_text(f, "print(1)");
  ::chmod(f.c_str(), 0644);
  auto s = ws.snapshot({});
  REQUIRE(s);
  ino_t ino = test::inode_of(f);
  ::chmod(f.c_str(), 0700);
  auto r = ws.restore(s->id);
  REQUIRE(r);
  CHECK(r->applied.changed == std::vector<std::string>{"script.py"});
  CHECK(r->files_written == 0);
  CHECK(test::inode_of(f) == ino);
  struct stat st {};
  REQUIRE(::stat(f.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0644);
}
