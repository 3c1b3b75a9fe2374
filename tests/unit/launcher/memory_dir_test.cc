// SPDX-License-Identifier: BSD-3-Clause
#include "kernel-launcher/memory_dir.h"

#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

using cellgate::launcher::ensure_memory_dir;
using cellgate::launcher::MemoryDir;

namespace {

long fs_type(const std::string& path) {
  struct statfs fs {};
  return ::statfs(path.c_str(), &fs) == 0 ? static_cast<long>(fs.f_type) : -1;
}

// A fresh dir on a disk file system (not /tmp if that is a tmpfs: /var/tmp then).
std::string disk_dir() {
  for (const char* base : {"/tmp", "/var/tmp", "/root"}) {
    if (fs_type(base) == TMPFS_MAGIC) continue;
    std::string tmpl = std::string(base) + "/cg-memdir-XXXXXX";
    if (char* made = ::mkdtemp(tmpl.data())) return made;
  }
  return "";
}

}  // namespace

TEST_CASE("ensure_memory_dir mounts a tmpfs on an empty disk dir, once, and leaves a used one alone", "[memory_dir]") {
  if (::geteuid() != 0) {
    WARN("mounting needs root: nothing to check");
    return;
  }
  const std::string base = disk_dir();
  REQUIRE_FALSE(base.empty());
  const std::string dir = base + "/k";

  auto first = ensure_memory_dir(dir, 0711);
  REQUIRE(first);
  CHECK(first.value() == MemoryDir::kMounted);
  CHECK(fs_type(dir) == TMPFS_MAGIC);
  CHECK((std::filesystem::status(dir).permissions() & std::filesystem::perms::all) == std::filesystem::perms(0711));

  std::ofstream(dir + "/kept") << "in memory";
  auto again = ensure_memory_dir(dir, 0711);
  REQUIRE(again);
  CHECK(again.value() == MemoryDir::kAlready);
  CHECK(std::filesystem::exists(dir + "/kept"));  // no second tmpfs over the first
  REQUIRE(::umount2(dir.c_str(), MNT_DETACH) == 0);
  CHECK(fs_type(dir) != TMPFS_MAGIC);

  const std::string used = base + "/used";
  std::filesystem::create_directories(used + "/an-older-kernel");
  auto left = ensure_memory_dir(used, 0711);
  REQUIRE(left);
  CHECK(left.value() == MemoryDir::kInUse);
  CHECK(fs_type(used) != TMPFS_MAGIC);
  CHECK(std::filesystem::exists(used + "/an-older-kernel"));

  // A path through a regular file cannot be made: an error, not a mount somewhere else.
  std::ofstream(base + "/file") << "x";
  auto bad = ensure_memory_dir(base + "/file/k", 0711);
  CHECK_FALSE(bad);

  std::filesystem::remove_all(base);
}
