// SPDX-License-Identifier: BSD-3-Clause
// labels: every label value a metric may carry, as enums, so that cardinality is fixed in code.
#include "metrics/labels.h"

#include <array>
#include <utility>

namespace cellgate::metrics {
namespace {

template <typename Enum, size_t N>
std::string_view pick(const std::array<std::string_view, N>& names, Enum v) {
  static_assert(N == static_cast<size_t>(Enum::kCount));
  const auto i = static_cast<size_t>(v);
  return i < N ? names[i] : std::string_view("other");
}

constexpr std::array<std::string_view, 19> kJailStages = {
    "options", "plan", "uid_slot", "cgroup", "seccomp", "workspace", "prepare", "clone", "id_map",
    "sync", "mount", "pivot_root", "capabilities", "credentials", "no_new_privs", "exec", "init",
    "timeout", "other"};

}  // namespace

std::string_view label(StartPath v) {
  return pick(std::array<std::string_view, 3>{"cold", "fork_server", "warm_pool"}, v);
}
std::string_view label(RestartReason v) {
  return pick(std::array<std::string_view, 4>{"requested", "died", "heartbeat", "execute_limit"}, v);
}
std::string_view label(RefusedReason v) {
  return pick(std::array<std::string_view, 8>{"auth", "rate_limit", "quota", "limit", "forbidden", "header_too_large",
                                              "body_too_large", "message_too_big"},
              v);
}
std::string_view label(KernelState v) {
  return pick(std::array<std::string_view, 6>{"starting", "idle", "busy", "paused", "restarting", "dead"}, v);
}
std::string_view label(JailStage v) { return pick(kJailStages, v); }

namespace {
constexpr std::array<std::string_view, 6> kEgressRefusals = {"policy", "address", "limit", "request", "upstream", "other"};
}  // namespace

std::string_view label(EgressRefusal v) { return pick(kEgressRefusals, v); }

EgressRefusal egress_refusal_from(std::string_view refused_by) {
  for (size_t i = 0; i + 1 < kEgressRefusals.size(); ++i)
    if (kEgressRefusals[i] == refused_by) return static_cast<EgressRefusal>(i);
  return EgressRefusal::kOther;
}

JailStage jail_stage_from_name(std::string_view stage) {
  // Several words of cellgate-jail and of the child's Stage enum name one step of the checklist.
  static constexpr std::pair<std::string_view, JailStage> kAliases[] = {
      {"uid_map", JailStage::kIdMap},        {"gid_map", JailStage::kIdMap},
      {"setns", JailStage::kClone},          {"join", JailStage::kClone},
      {"cgroup_ns", JailStage::kCgroup},     {"mount_private", JailStage::kMount},
      {"remount_root", JailStage::kMount},   {"mounts", JailStage::kMount},
      {"setgroups", JailStage::kCredentials}, {"setgid", JailStage::kCredentials},
      {"setuid", JailStage::kCredentials},   {"rlimits", JailStage::kPrepare},
      {"pdeathsig", JailStage::kPrepare},    {"fds", JailStage::kPrepare},
      {"chdir", JailStage::kExec},           {"fork", JailStage::kClone},
      {"close_fds", JailStage::kPrepare},    {"hostname", JailStage::kPrepare},
      {"loopback", JailStage::kPrepare},     {"setsid", JailStage::kInit},
      {"signals", JailStage::kInit},
  };
  for (const auto& [word, st] : kAliases)
    if (word == stage) return st;
  for (size_t i = 0; i + 1 < kJailStages.size(); ++i)
    if (kJailStages[i] == stage) return static_cast<JailStage>(i);
  return JailStage::kOther;
}

KernelState kernel_state_from(std::string_view execution_state, bool paused) {
  if (paused) return KernelState::kPaused;
  if (execution_state == "idle") return KernelState::kIdle;
  if (execution_state == "busy") return KernelState::kBusy;
  if (execution_state == "starting") return KernelState::kStarting;
  if (execution_state == "restarting" || execution_state == "autorestarting") return KernelState::kRestarting;
  return KernelState::kDead;
}

}  // namespace cellgate::metrics
