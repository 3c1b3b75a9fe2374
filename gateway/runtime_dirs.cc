// SPDX-License-Identifier: BSD-3-Clause
#include "gateway/runtime_dirs.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <tuple>
#include <utility>

#include <fmt/core.h>

#include "common/log.h"
#include "kernel-launcher/memory_dir.h"

namespace cellgate::gateway {
namespace {

constexpr uint64_t kMaxJails = 1024;               // cellgate-jail's default --uid-range: 1024 slots
// The env file (at most 1 MiB: cellgate-jail refuses more), the status file and the recorded policy.
constexpr uint64_t kPerJailFiles = (uint64_t{1} << 20) + (uint64_t{64} << 10);

// required: --ipc-tmpfs on, where what cannot be done is a configuration error.
void in_memory(const std::string& dir, mode_t mode, uint64_t size, bool required) {
  auto r = launcher::ensure_memory_dir(dir, mode, size);
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
  // s/ holds what the jail helpers write for their kernels, outside the kernels' cgroups: a status
  // file and a log of at most --kernel-log-bytes each. Sized for the most jails cellgate-jail runs
  // at once (its uid slots), it can never fill: a full one would fail the helpers' status writes.
  // k/ keeps the tmpfs default: what a kernel writes into its dir there is charged to its own
  // memory cgroup, and a smaller shared size would only let one kernel fill it for all the others.
  const uint64_t s_size = kMaxJails * (config.kernel_log_bytes + kPerJailFiles);
  for (auto [name, mode, size] : {std::tuple{"k", 0711, uint64_t{0}}, std::tuple{"s", 0700, s_size}}) {
    const std::string dir = config.runtime_dir + "/" + name;
    if (tmpfs) in_memory(dir, static_cast<mode_t>(mode), size, config.ipc_tmpfs == "on");
    make_dirs(dir, static_cast<mode_t>(mode));
  }
}

void make_dirs(const std::string& path, mode_t mode) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  ::chmod(path.c_str(), mode);
}

}  // namespace cellgate::gateway
