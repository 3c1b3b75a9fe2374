// SPDX-License-Identifier: BSD-3-Clause
// hostile-file tests: symlink escapes, FIFOs, devices, sparse giants, file floods, odd names, hard links.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "test_util.h"
#include "workspace/fsck.h"
#include "workspace/sha256.h"
#include "workspace/workspace_manager.h"

using namespace cellgate::workspace;
using cellgate::common::Errc;
using test::TempDir;

namespace {

struct Fixture {
  TempDir tmp;
  std::unique_ptr<WorkspaceManager> mgr;
  std::unique_ptr<Workspace> ws;
  explicit Fixture(WorkspaceConfig config = {}, const std::string& base = "/tmp") : tmp(base) {
    auto m = WorkspaceManager::open(tmp.path() + "/data", config);
    REQUIRE(m);
    mgr = std::move(m.value());
    auto w = mgr->create({"mallory", "w"});
    REQUIRE(w);
    ws = std::make_unique<Workspace>(std::move(w.value()));
  }
  std::string t() const { return ws->tree_path(); }
  bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }
};

}  // namespace

TEST_CASE("symlinks are recorded, never followed", "[workspace]") {
  Fixture f;
  test::write_text(f.tmp.path() + "/outside", "host secret");
  REQUIRE(::symlink("/etc/shadow", (f.t() + "/shadow").c_str()) == 0);
  REQUIRE(::symlink("../..", (f.t() + "/up").c_str()) == 0);
  REQUIRE(::symlink("../../outside", (f.t() + "/out").c_str()) == 0);
  auto s = f.ws->snapshot({});
  REQUIRE(s);
  CHECK(s->files_hashed == 0);
  CHECK(s->objects_written == 0);
  CHECK_FALSE(f.mgr->store().contains(sha256_hex("host secret")));
  auto m = f.ws->load_snapshot(s->id);
  REQUIRE(m);
  REQUIRE(m->entries.size() == 3);
  CHECK(m->entries[1].type == EntryType::kSymlink);
  CHECK(m->entries[1].link_target == "/etc/shadow");
  ::unlink((f.t() + "/shadow").c_str());
  REQUIRE(f.ws->restore(s->id));
  char target[64] = {};
  REQUIRE(::readlink((f.t() + "/shadow").c_str(), target, sizeof(target)) > 0);
  CHECK(std::string(target) == "/etc/shadow");
  CHECK(test::read_text(f.tmp.path() + "/outside") == "host secret");
}

TEST_CASE("a FIFO never blocks a snapshot", "[workspace]") {
  Fixture f;
  REQUIRE(::mkfifo((f.t() + "/fifo").c_str(), 0644) == 0);
  test::write_text(f.t() + "/normal", "n");
  int code = test::run_in_child([&] {
    auto s = f.ws->snapshot({});
    if (!s || !s->created) return 1;
    return f.has(s->skipped, "fifo") && s->files_hashed == 1 ? 0 : 2;
  }, 20);
  CHECK(code == 0);
}

TEST_CASE("device nodes are skipped", "[workspace]") {
  Fixture f;
  if (::mknod((f.t() + "/null").c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) {
    WARN("mknod not permitted here (errno " << errno << "); device case not exercised");
    return;
  }
  auto s = f.ws->snapshot({});
  REQUIRE(s);
  CHECK(f.has(s->skipped, "null"));
  CHECK_FALSE(s->created);  // a device alone is not content
  CHECK(s->files_hashed == 0);
}

TEST_CASE("a huge sparse file costs what it holds; data past the byte cap leaves the store intact", "[workspace]") {
  WorkspaceConfig config;
  config.max_bytes = 1 << 20;
  Fixture f(config);
  test::write_text(f.t() + "/ok", "fine");
  auto s1 = f.ws->snapshot({});
  REQUIRE(s1);
  // 10 GiB of holes hold nothing: stored as its (no) extents, within a 1 MiB cap.
  int fd = ::open((f.t() + "/sparse").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::ftruncate(fd, off_t{10} << 30) == 0);
  ::close(fd);
  auto s2 = f.ws->snapshot({});
  REQUIRE(s2);
  CHECK(s2->bytes_hashed < 4096);
  // Data past the cap is refused, and nothing is published.
  test::write_text(f.t() + "/dense", std::string(2 << 20, 'd'));
  auto s3 = f.ws->snapshot({});
  REQUIRE_FALSE(s3);
  CHECK(s3.error().code == Errc::kTooLarge);
  CHECK(f.ws->list_snapshots()->size() == 2);
  CHECK(fsck(f.mgr->store(), f.mgr->data_dir())->clean());
  ::unlink((f.t() + "/dense").c_str());
  test::write_text(f.t() + "/ok", "fine again");
  auto s4 = f.ws->snapshot({});
  REQUIRE(s4);
  CHECK(s4->created);
}

TEST_CASE("100k tiny files hit the file-count cap", "[workspace]") {
  WorkspaceConfig config;
  config.max_files = 5000;
  Fixture f(config, test::fast_base());
  test::write_text(f.t() + "/first", "1");
  auto s1 = f.ws->snapshot({});
  REQUIRE(s1);
  ::mkdir((f.t() + "/flood").c_str(), 0755);
  for (int i = 0; i < 100'000; ++i) {
    int fd = ::open((f.t() + "/flood/" + std::to_string(i)).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    ::close(fd);
  }
  auto s2 = f.ws->snapshot({});
  REQUIRE_FALSE(s2);
  CHECK(s2.error().code == Errc::kTooLarge);
  CHECK(s2.error().message.find("5000") != std::string::npos);
  CHECK(f.ws->list_snapshots()->size() == 1);
  CHECK(fsck(f.mgr->store(), f.mgr->data_dir())->clean());
}

TEST_CASE("names with newlines and invalid UTF-8 round-trip", "[workspace]") {
  Fixture f;
  const std::string odd1 = "line\nbreak";
  const std::string odd2 = "bad\xff\xfeutf8 %41 ";
  const std::string odd3 = "tab\there";
  ::mkdir((f.t() + "/" + odd2).c_str(), 0755);
  test::write_text(f.t() + "/" + odd1, "one");
  test::write_text(f.t() + "/" + odd2 + "/" + odd3, "three");
  auto s = f.ws->snapshot({});
  REQUIRE(s);
  CHECK(s->diff.added.size() == 3);
  REQUIRE(remove_tree_at(AT_FDCWD, f.t() + "/" + odd2));
  ::unlink((f.t() + "/" + odd1).c_str());
  REQUIRE(f.ws->restore(s->id));
  CHECK(test::read_text(f.t() + "/" + odd1) == "one");
  CHECK(test::read_text(f.t() + "/" + odd2 + "/" + odd3) == "three");
  std::string archive = f.tmp.path() + "/odd.tar";
  int fd = ::open(archive.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(f.ws->write_tar(s->id, fd_sink(fd)));
  ::close(fd);
  CHECK(std::system(("/bin/tar -tf " + archive + " > /dev/null").c_str()) == 0);
}

TEST_CASE("hard links and in-place writes never alias snapshot content", "[workspace]") {
  Fixture f;
  test::write_text(f.t() + "/a", "original");
  REQUIRE(::link((f.t() + "/a").c_str(), (f.t() + "/b").c_str()) == 0);
  auto s = f.ws->snapshot({});
  REQUIRE(s);
  CHECK(s->objects_written == 1);
  // Write in place (same inode), as a kernel would.
  int fd = ::open((f.t() + "/a").c_str(), O_WRONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(::pwrite(fd, "ORIG", 4, 0) == 4);
  ::close(fd);
  REQUIRE(f.ws->restore(s->id));
  CHECK(test::read_text(f.t() + "/a") == "original");
  CHECK(test::read_text(f.t() + "/b") == "original");
  CHECK(test::inode_of(f.t() + "/a") != test::inode_of(f.t() + "/b"));
  CHECK(fsck(f.mgr->store(), f.mgr->data_dir())->clean());
}

TEST_CASE("very deep trees are skipped by snapshots and removed by restore and delete", "[workspace]") {
  Fixture f;
  test::write_text(f.t() + "/keep", "k");
  auto s1 = f.ws->snapshot({});
  REQUIRE(s1);
  int fd = ::open(f.t().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  for (int i = 0; i < 1000; ++i) {  // relative mkdirs go past PATH_MAX, as kernel code can
    REQUIRE(::mkdirat(fd, "d", 0755) == 0);
    int next = ::openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(next >= 0);
    ::close(fd);
    fd = next;
  }
  ::close(fd);
  auto s2 = f.ws->snapshot({});
  REQUIRE(s2);
  CHECK(s2->created);
  CHECK(s2->skipped.size() == 1);
  REQUIRE(f.ws->restore(s1->id));
  CHECK_FALSE(test::exists(f.t() + "/d"));
  CHECK(list_dir_at(AT_FDCWD, f.t())->size() == 1);
  REQUIRE(f.ws->restore(s2->id));  // the stored part comes back, 256 levels
  CHECK(test::exists(f.t() + "/d/d/d"));
  REQUIRE(f.mgr->remove({"mallory", "w"}));
  CHECK(list_dir_at(AT_FDCWD, f.tmp.path() + "/data/tmp")->empty());
}
