// SPDX-License-Identifier: BSD-3-Clause
// kernel_memory_merge: --kernel-memory-merge on starts the host's KSM daemon at a bounded scan rate.
#include "gateway/kernel_memory_merge.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "common/config_error.h"

namespace cellgate::gateway {
namespace {

using common::ConfigError;

// A sysfs value as read: "[none] scan-time" for advisor_mode becomes "none". Empty when unreadable.
std::string read_setting(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  if (auto open = text.find('['); open != std::string::npos) {
    auto close = text.find(']', open);
    if (close != std::string::npos) return text.substr(open + 1, close - open - 1);
  }
  return text;
}

void write_setting(const std::string& path, const std::string& value) {
  std::ofstream out(path);
  out << value << '\n';
  out.flush();
  if (!out) throw ConfigError(fmt::format("--kernel-memory-merge on: cannot write {} to {}: {}", value, path, std::strerror(errno)));
}

}  // namespace

std::string start_kernel_memory_merge(const std::string& ksm_dir, uint64_t pages_per_second) {
  if (read_setting(ksm_dir + "/run").empty())
    throw ConfigError(fmt::format("--kernel-memory-merge on: this Linux kernel has no KSM ({}/run is missing: "
                                  "CONFIG_KSM is off); start with --kernel-memory-merge off", ksm_dir));
  // ksmd wakes every sleep_millisecs and scans pages_to_scan pages (ksm.rst, "KSM daemon sysfs
  // interface"): a fixed rate, so its CPU is that rate times the cost of a page (4-5 us on the VM of
  // kernels/zygote/README.md). Not the scan-time advisor: it never plans below 10% of a CPU
  // (KSM_ADVISOR_MIN_CPU in mm/ksm.c) and overshot advisor_max_cpu=10 (12.7-17.8% measured). Setting
  // advisor_mode resets pages_to_scan, so it goes first; run goes last, with the bound in place.
  std::vector<std::pair<std::string, std::string>> settings = {
      {"sleep_millisecs", "20"}, {"pages_to_scan", std::to_string(std::max<uint64_t>(1, pages_per_second / 50))}, {"run", "1"}};
  if (!read_setting(ksm_dir + "/advisor_mode").empty()) settings.insert(settings.begin(), {"advisor_mode", "none"});
  std::string line = fmt::format("kernel memory merge on (KSM, host-wide, kept after exit): {}", ksm_dir);
  for (const auto& [name, value] : settings) {
    const std::string before = read_setting(ksm_dir + "/" + name);
    write_setting(ksm_dir + "/" + name, value);
    line += fmt::format(" {}={}{}", name, value, before == value ? "" : " (was " + before + ")");
  }
  return line + "; a merged page is a side channel between the kernels that share it (README)";
}

}  // namespace cellgate::gateway
