// SPDX-License-Identifier: BSD-3-Clause
#include "gateway/runtime_dirs.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <utility>

#include <fmt/core.h>

#include "common/log.h"
#include "kernel-launcher/memory_dir.h"

namespace cellgate::gateway {
namespace {

// required: --ipc-tmpfs on, where what cannot be done is a configuration error.
void in_memory(const std::string& dir, mode_t mode, bool required) {
  auto r = launcher::ensure_memory_dir(dir, mode);
  if (!r) {
    std::string why = r.error().sys_errno != 0 ? fmt::format("{}: {}", r.error().message, std::strerror(r.error().sys_errno))
                                                : r.error().message;
    if (required) throw ConfigError("--ipc-tmpfs on: " + why);
    common::log_warn("msg=\"kernels' dirs stay on disk\" reason=\"{}\"", why);
  } else if (r.value() == launcher::MemoryDir::kInUse) {
    if (required) throw ConfigError("--ipc-tmpfs on: " + dir + " is on a disk and holds kernels' dirs (stop them, or empty it)");
    common::log_info("msg=\"kernels' dirs stay on disk: the dir holds kernels started before\" dir={}", dir);
  } else if (r.value() == launcher::MemoryDir::kMounted) {
    common::log_info("msg=\"kernels' dirs in memory: tmpfs mounted\" dir={}", dir);
  }
}

}  // namespace

void prepare_runtime_dirs(const Config& config) {
  const bool tmpfs = config.ipc_tmpfs == "on" ||
                     (config.ipc_tmpfs == "auto" && config.runtime_dir_default && ::geteuid() == 0);
  for (auto [name, mode] : {std::pair{"k", 0711}, std::pair{"s", 0700}}) {
    const std::string dir = config.runtime_dir + "/" + name;
    if (tmpfs) in_memory(dir, static_cast<mode_t>(mode), config.ipc_tmpfs == "on");
    make_dirs(dir, static_cast<mode_t>(mode));
  }
}

void make_dirs(const std::string& path, mode_t mode) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  ::chmod(path.c_str(), mode);
}

}  // namespace cellgate::gateway
