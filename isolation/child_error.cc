// SPDX-License-Identifier: BSD-3-Clause
// child_error: ChildReport records from the child → stage names and messages (parent side).
#include "isolation/child_error.h"

#include <array>
#include <cstring>

namespace cellgate::isolation {

std::string stage_name(uint32_t stage) {
  static constexpr std::array kNames = {
      "none", "sync", "pdeathsig", "cgroup_ns", "mount_private", "mount", "pivot_root", "remount_root",
      "hostname", "loopback", "rlimits", "fork", "setsid", "signals", "capabilities", "setgroups", "setgid",
      "setuid", "no_new_privs", "seccomp", "close_fds", "chdir", "exec", "init", "setns", "egress",
      "memory_merge",
  };
  return stage < kNames.size() ? kNames[stage] : "unknown";
}

std::optional<child::ChildReport> decode_report(const void* data, size_t size) {
  if (size != sizeof(child::ChildReport)) return std::nullopt;
  child::ChildReport r;
  std::memcpy(&r, data, sizeof r);
  auto kind = static_cast<child::ReportKind>(r.kind);
  if (kind != child::ReportKind::kError && kind != child::ReportKind::kHello) return std::nullopt;
  return r;
}

ChildFailure describe_failure(const child::ChildReport& report, const std::string& mount_target) {
  ChildFailure f;
  f.stage = stage_name(report.stage);
  f.err = report.err;
  std::string what = f.stage;
  if (!mount_target.empty()) what += " " + mount_target;
  f.message = what + ": " + std::strerror(report.err);
  return f;
}

}  // namespace cellgate::isolation
