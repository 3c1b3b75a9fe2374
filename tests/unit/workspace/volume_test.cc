// SPDX-License-Identifier: BSD-3-Clause
// volume: workspace trees in a loop-mounted btrfs image, each with a live quota (needs root).
#include "workspace/volume.h"

#include <fcntl.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
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

// Whatever a test's checks leave behind (a failed REQUIRE throws past release()), this unmounts the
// data dir's volume and detaches its loop device at scope end, before the temp dir goes.
class VolumeCleanup {
 public:
  explicit VolumeCleanup(std::string data) : data_(std::move(data)) {}
  ~VolumeCleanup() {
    while (::umount2(workspaces_dir(data_).c_str(), UMOUNT_NOFOLLOW) == 0) {
    }
    const std::string dev = find_loop_device(Volume::image_path(data_));
    if (dev.empty()) return;
    int fd = ::open(dev.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      (void)::ioctl(fd, LOOP_CLR_FD, 0);
      ::close(fd);
    }
  }
  VolumeCleanup(const VolumeCleanup&) = delete;
  VolumeCleanup& operator=(const VolumeCleanup&) = delete;

 private:
  std::string data_;
};

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
  VolumeCleanup cleanup(data);
  WorkspaceConfig config;
  config.volume = VolumeMode::kAuto;  // as root: on
  config.max_bytes = 16 << 20;
  {
    auto mgr = WorkspaceManager::open(data, config);
    REQUIRE(mgr);
    REQUIRE((*mgr)->volume() != nullptr);
    CHECK(Volume::is_mounted(data));
    const std::string image = Volume::image_path(data);
    CHECK(find_loop_device(image) != "");
    // The default size is fixed, and the image sparse: made, it holds what mkfs wrote, not its size.
    struct stat st {};
    REQUIRE(::stat(image.c_str(), &st) == 0);
    CHECK(static_cast<uint64_t>(st.st_size) == Volume::kDefaultBytes);
    CHECK(static_cast<uint64_t>(st.st_blocks) * 512 < (uint64_t{64} << 20));

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

TEST_CASE("auto as root never falls back to plain directories unnoticed", "[workspace][volume]") {
  if (!can_run()) {
    WARN("needs root, btrfs, /dev/loop-control and mkfs.btrfs: nothing to check");
    return;
  }
  TempDir tmp("/var/tmp");
  const std::string data = tmp.path() + "/data";
  VolumeCleanup cleanup(data);
  // A data dir whose workspaces were made without a volume: the volume cannot hold them.
  REQUIRE(::mkdir(data.c_str(), 0711) == 0);
  REQUIRE(::mkdir(workspaces_dir(data).c_str(), 0711) == 0);
  REQUIRE(::mkdir((workspaces_dir(data) + "/u").c_str(), 0711) == 0);
  WorkspaceConfig config;
  config.volume = VolumeMode::kAuto;
  auto mgr = WorkspaceManager::open(data, config);
  REQUIRE_FALSE(mgr);
  CHECK(mgr.error().message.find("made without a volume") != std::string::npos);
  CHECK(mgr.error().message.find("--workspace-volume off") != std::string::npos);
  CHECK_FALSE(mounted(workspaces_dir(data)));
  CHECK_FALSE(cellgate::workspace::test::exists(Volume::image_path(data)));
  // Off is the operator's explicit choice: plain directories.
  config.volume = VolumeMode::kOff;
  auto plain = WorkspaceManager::open(data, config);
  REQUIRE(plain);
  CHECK((*plain)->volume() == nullptr);
}

TEST_CASE("an owner's workspaces together hold at most owner_max_bytes, at write time", "[workspace][volume]") {
  if (!can_run()) {
    WARN("needs root, btrfs, /dev/loop-control and mkfs.btrfs: nothing to check");
    return;
  }
  TempDir tmp("/var/tmp");
  const std::string data = tmp.path() + "/data";
  VolumeCleanup cleanup(data);
  WorkspaceConfig config;
  config.volume = VolumeMode::kOn;
  config.volume_bytes = uint64_t{1} << 30;
  config.max_bytes = 16 << 20;
  {
    // Made while the owner had no cap: the cap that came since holds from the next ensure().
    auto mgr = WorkspaceManager::open(data, config);
    REQUIRE(mgr);
    REQUIRE((*mgr)->create({"u", "a"}));
    CHECK(fill(workspaces_dir(data) + "/u/a/tree/f", 12) == std::pair<int, int>{12, 0});
    (*mgr)->volume()->release();
  }
  config.owner_max_bytes = 24 << 20;
  auto mgr = WorkspaceManager::open(data, config);
  REQUIRE(mgr);
  REQUIRE((*mgr)->ensure({"u", "a"}));
  auto b = (*mgr)->create({"u", "b"});
  REQUIRE(b);
  // Each under its own 16 MiB, together past the owner's 24.
  auto [written, err] = fill(b->tree_path() + "/f", 12);
  CHECK(written < 12);
  CHECK((err == EDQUOT || err == ENOSPC));
  auto group = (*mgr)->owner_quota("u");
  REQUIRE(group);
  CHECK(group->limit == (24u << 20));
  // Another owner has a group of their own; what u freed is u's again at once.
  auto c = (*mgr)->create({"v", "c"});
  REQUIRE(c);
  CHECK(fill(c->tree_path() + "/f", 12) == std::pair<int, int>{12, 0});
  REQUIRE(::unlink((workspaces_dir(data) + "/u/a/tree/f").c_str()) == 0);
  CHECK(fill(b->tree_path() + "/f", 12) == std::pair<int, int>{12, 0});
  REQUIRE((*mgr)->remove({"u", "a"}));
  (*mgr)->volume()->release();
}
