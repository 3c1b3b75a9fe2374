// SPDX-License-Identifier: BSD-3-Clause
// loop_device: an image file as a block device (loop(4)), found again when it already is one.
#include "workspace/loop_device.h"

#include <fcntl.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include <fmt/core.h>

#include "common/unique_fd.h"
#include "workspace/io_util.h"

namespace cellgate::workspace {
namespace {

using common::Errc;
using common::make_error;

constexpr int kAttempts = 16;  // free devices taken by others between GET_FREE and CONFIGURE

std::string real_path(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) != nullptr ? std::string(buf) : path;
}

}  // namespace

std::string find_loop_device(const std::string& image) {
  const std::string want = real_path(image);
  auto names = list_dir_at(AT_FDCWD, "/sys/block");
  if (!names) return "";
  for (const auto& name : *names) {
    if (!name.starts_with("loop")) continue;
    auto backing = read_file_at(AT_FDCWD, "/sys/block/" + name + "/loop/backing_file", PATH_MAX);
    if (!backing) continue;  // not attached
    std::string path = *backing;
    while (!path.empty() && path.back() == '\n') path.pop_back();
    if (path == want) return "/dev/" + name;
  }
  return "";
}

common::Result<LoopDevice> attach_loop_device(const std::string& image) {
  common::UniqueFd file(::open(image.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (!file) return make_error(Errc::kInternal, fmt::format("open {}: {}", image, std::strerror(errno)), errno);
  common::UniqueFd control(::open("/dev/loop-control", O_RDWR | O_CLOEXEC));
  if (!control) return make_error(Errc::kInternal, fmt::format("/dev/loop-control: {}", std::strerror(errno)), errno);
  int err = 0;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    int index = ::ioctl(control.get(), LOOP_CTL_GET_FREE);
    if (index < 0) return make_error(Errc::kInternal, fmt::format("no free loop device: {}", std::strerror(errno)), errno);
    const std::string dev = fmt::format("/dev/loop{}", index);
    common::UniqueFd loop(::open(dev.c_str(), O_RDWR | O_CLOEXEC));
    if (!loop) return make_error(Errc::kInternal, fmt::format("open {}: {}", dev, std::strerror(errno)), errno);
    for (uint32_t flags : {uint32_t{LO_FLAGS_AUTOCLEAR | LO_FLAGS_DIRECT_IO}, uint32_t{LO_FLAGS_AUTOCLEAR}}) {
      loop_config config{};
      config.fd = static_cast<uint32_t>(file.get());
      config.block_size = 4096;
      config.info.lo_flags = flags;
      std::strncpy(reinterpret_cast<char*>(config.info.lo_file_name), real_path(image).c_str(), LO_NAME_SIZE - 1);
      if (::ioctl(loop.get(), LOOP_CONFIGURE, &config) == 0) return LoopDevice{dev, std::move(loop)};
      err = errno;
      if (err != EINVAL) break;  // EINVAL: direct I/O not possible on this image's file system
    }
    if (err != EBUSY) break;  // EBUSY: someone took this device meanwhile; ask for another
  }
  return make_error(Errc::kInternal, fmt::format("attach {} to a loop device: {}", image, std::strerror(err)), err);
}

}  // namespace cellgate::workspace
