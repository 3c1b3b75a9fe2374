// SPDX-License-Identifier: BSD-3-Clause
// file_api tests: path validation, symlink refusal, FIFOs, atomic writes.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "test_util.h"
#include "workspace/file_api.h"
#include "workspace/safe_path.h"

using namespace cellgate::workspace;
using cellgate::common::Errc;
using test::TempDir;

TEST_CASE("relative path validation", "[workspace]") {
  CHECK(validate_relative_path("a/b/c"));
  CHECK(validate_relative_path("a/b/"));
  CHECK(validate_relative_path("dir/.hidden"));
  CHECK(validate_relative_path("a..b"));
  for (const std::string& bad : std::vector<std::string>{"", "/etc/passwd", "..", "a/../b", "a/./b", "a//b", "./a", std::string("a\0b", 3),
                          std::string(5000, 'x'), std::string(300, 'y')}) {
    INFO(bad);
    auto st = validate_relative_path(bad);
    REQUIRE_FALSE(st);
    CHECK(st.error().code == Errc::kBadRequest);
  }
}

TEST_CASE("file api reads, lists, writes and removes", "[workspace]") {
  TempDir tmp;
  FileApiLimits limits;
  limits.max_read_bytes = 1000;
  FileApi api(tmp.path(), limits);
  REQUIRE(api.make_dir("sub"));
  REQUIRE(api.write_file("sub/a.txt", "hello"));
  CHECK(api.read_file("sub/a.txt").value() == "hello");
  REQUIRE(api.write_file("sub/a.txt", "bye"));
  CHECK(api.read_file("sub/a.txt").value() == "bye");
  auto list = api.list_dir("sub");
  REQUIRE(list);
  REQUIRE(list->size() == 1);  // no temp left behind
  CHECK((*list)[0].name == "a.txt");
  CHECK((*list)[0].size == 3);
  CHECK(api.list_dir("")->size() == 1);
  CHECK(api.stat("sub")->type == NodeType::kDir);
  CHECK(api.write_file("missing/x", "1").error().code == Errc::kNotFound);
  CHECK(api.read_file("nope").error().code == Errc::kNotFound);
  CHECK(api.make_dir("sub").error().code == Errc::kConflict);
  CHECK(api.write_file("sub", "x").error().code == Errc::kConflict);
  CHECK(api.remove("sub", false).error().code == Errc::kConflict);
  test::write_text(tmp.path() + "/big", std::string(2000, 'x'));
  CHECK(api.read_file("big").error().code == Errc::kTooLarge);
  REQUIRE(api.remove("sub", true));
  CHECK_FALSE(test::exists(tmp.path() + "/sub"));
}

TEST_CASE("file api rejects traversal, absolute, NUL and symlink escapes", "[workspace]") {
  TempDir tmp;
  std::string tree = tmp.path() + "/tree";
  ::mkdir(tree.c_str(), 0755);
  test::write_text(tmp.path() + "/secret", "outside");
  REQUIRE(::symlink("../secret", (tree + "/up").c_str()) == 0);
  REQUIRE(::symlink("/etc", (tree + "/etc").c_str()) == 0);
  REQUIRE(::symlink(".", (tree + "/self").c_str()) == 0);
  FileApi api(tree);
  for (const std::string& p : std::vector<std::string>{"../secret", "/etc/passwd", std::string("a\0b", 3), "up", "etc/passwd", "self/up"}) {
    INFO(p);
    auto r = api.read_file(p);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == Errc::kBadRequest);
  }
  CHECK(api.write_file("etc/evil", "x").error().code == Errc::kBadRequest);
  CHECK(api.write_file("up", "x").error().code == Errc::kBadRequest);
  CHECK(api.list_dir("etc").error().code == Errc::kBadRequest);
  CHECK(api.list_dir("../").error().code == Errc::kBadRequest);
  CHECK(test::read_text(tmp.path() + "/secret") == "outside");
  // Removing a symlink removes the link, never its target.
  REQUIRE(api.remove("up", false));
  CHECK(test::exists(tmp.path() + "/secret"));
}

TEST_CASE("file api never blocks on a FIFO", "[workspace]") {
  TempDir tmp;
  REQUIRE(::mkfifo((tmp.path() + "/fifo").c_str(), 0644) == 0);
  FileApi api(tmp.path());
  int code = test::run_in_child([&] {
    auto r = api.read_file("fifo");
    return (!r && r.error().code == Errc::kBadRequest) ? 0 : 1;
  }, 10);
  CHECK(code == 0);
  CHECK(api.stat("fifo")->type == NodeType::kOther);
  CHECK(api.write_file("fifo", "x").error().code == Errc::kConflict);
}
