// SPDX-License-Identifier: BSD-3-Clause
// volume: workspace trees in a loop-mounted btrfs image, each with a live quota (needs root).
#include "workspace/volume.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <fstream>
#include <string>

#include "test_util.h"
#include "workspace/layout.h"
#include "workspace/loop_device.h"
#include "workspace/workspace_manager.h"

using namespace cellgate::workspace;
using cellgate::workspace::test::TempDir;

namespace {

bool mounted(const std::string& path) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    size_t pos = 0;
    for (int i = 0; i < 4 && pos != std::string::npos; ++i) pos = line.find(' ', pos + 1);
    if (pos == std::string::npos) continue;
    size_t end = line.find(' ', pos + 1);
    if (line.substr(pos + 1, end - pos - 1) == path) return true;
  }
  return false;
}

// Writes MiB blocks into path until a write fails or `mib` are written; returns (MiB written, errno).
std::pair<int, int> fill(const std::string& path, int mib) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  std::string block(1 << 20, 'q');
  int written = 0, err = 0;
  for (; written < mib; ++written) {
    // A write cut short at the quota is followed by one that fails with its errno.
    ssize_t n = ::write(fd, block.data(), block.size());
    if (n == static_cast<ssize_t>(block.size()) && ::fsync(fd) == 0) continue;
    if (n >= 0 && ::write(fd, block.data(), block.size()) >= 0 && ::fsync(fd) == 0) continue;
    err = errno;
    break;
  }
  ::close(fd);
  return {written, err};
}

bool can_run() {
  if (::geteuid() != 0) return false;
  std::ifstream fs("/proc/filesystems");
  std::string all((std::istreambuf_iterator<char>(fs)), std::istreambuf_iterator<char>());
  return all.find("btrfs") != std::string::npos && ::access("/dev/loop-control", R_OK | W_OK) == 0 &&
         (::access("/usr/sbin/mkfs.btrfs", X_OK) == 0 || ::access("/sbin/mkfs.btrfs", X_OK) == 0);
}

}  // namespace

TEST_CASE("workspaces in a volume get a live quota, and the volume goes without a trace", "[workspace][volume]") {
  if (!can_run()) {
    WARN("needs root, btrfs, /dev/loop-control and mkfs.btrfs: nothing to check");
    return;
  }
  TempDir tmp("/var/tmp");
  const std::string data = tmp.path() + "/data";
  WorkspaceConfig config;
  config.volume = VolumeMode::kOn;
  config.volume_bytes = uint64_t{1} << 30;
  config.max_bytes = 16 << 20;
  {
    auto mgr = WorkspaceManager::open(data, config);
    REQUIRE(mgr);
    REQUIRE((*mgr)->volume() != nullptr);
    CHECK(Volume::is_mounted(data));
    const std::string image = Volume::image_path(data);
    CHECK(find_loop_device(image) != "");

    auto ws = (*mgr)->create({"u", "w"});
    REQUIRE(ws);
    auto [written, err] = fill(ws->tree_path() + "/big", 64);
    CHECK(written <= 16);
    CHECK((err == EDQUOT || err == ENOSPC));
    // Another workspace has its own quota; ensure() applies a changed one.
    auto other = (*mgr)->ensure({"u", "w2", 4 << 20});
    REQUIRE(other);
    auto [w2, e2] = fill(other->tree_path() + "/f", 8);
    CHECK(w2 <= 4);
    CHECK(e2 != 0);
    REQUIRE((*mgr)->ensure({"u", "w2", 32 << 20}));
    REQUIRE(::unlink((other->tree_path() + "/f").c_str()) == 0);
    auto [w3, e3] = fill(other->tree_path() + "/f", 8);
    CHECK(w3 == 8);
    CHECK(e3 == 0);

    // A second opener (`cellgate gc`) finds it mounted and leaves it so.
    auto second = Volume::open_existing(data);
    REQUIRE(second);
    REQUIRE(*second);
    CHECK_FALSE((*second)->mounted_here());
    (*second)->release();  // the first opener still holds it
    CHECK(Volume::is_mounted(data));
    second->reset();

    REQUIRE((*mgr)->remove({"u", "w"}));
    CHECK_FALSE(cellgate::workspace::test::exists(ws->tree_path()));
    (*mgr)->volume()->release();
    CHECK_FALSE(mounted(workspaces_dir(data)));
    CHECK(find_loop_device(image) == "");
  }
  // Opened again: the same volume, the workspace still there with its files.
  auto mgr = WorkspaceManager::open(data, config);
  REQUIRE(mgr);
  CHECK(cellgate::workspace::test::exists(workspaces_dir(data) + "/u/w2/tree/f"));
  // Whatever opens the data dir without mounting it cannot mistake an empty dir for no snapshots.
  (*mgr)->volume()->release();
  auto refs = enumerate_manifests(data);
  REQUIRE_FALSE(refs);
  CHECK(refs.error().message.find("not mounted") != std::string::npos);
}
