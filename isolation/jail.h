// SPDX-License-Identifier: BSD-3-Clause
// jail: the helper's parent side — prepare (slot, cgroup, plan), spawn (clone, handshake), supervise.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "isolation/cgroup.h"
#include "isolation/jail_entry.h"
#include "isolation/jail_options.h"
#include "isolation/jail_plan.h"
#include "isolation/policy_file.h"
#include "isolation/stdio_relay.h"
#include "isolation/uid_slots.h"

namespace cellgate::isolation {

// Where the helper keeps its state on the host.
inline constexpr const char* kRunDir = "/run/cellgate";
// Outside kRunDir on purpose: the child resolves this path as an unmapped "other" user, so every
// component must stay searchable (the launcher may make /run/cellgate 0700).
inline constexpr const char* kNewRoot = "/run/cellgate-root";
inline constexpr const char* kUidLockDir = "/run/cellgate/uids";

// A setup failure before or during the child's setup (exit code 126).
struct SetupFailure {
  std::string stage;
  int err = 0;
  std::string message;  // "<stage>: <strerror>" or a more specific text
  int exit_code = 126;  // 125 when the options turn out invalid while planning
};

class Jail {
 public:
  Jail(JailOptions options, Policy policy);
  // runs in: the helper's only thread. Builds everything, clones, releases the child and
  // supervises it until the jail ends; returns the helper's exit code.
  int run();
  // The fork server's hooks (see jail_entry.h JailHooks).
  void set_hooks(const JailHooks& hooks) { hooks_ = hooks; }

 private:
  struct RwDir {
    std::string path;
    bool entries = false;  // also chown root-owned files directly inside (bind-same dirs)
    common::UniqueFd tree;
    common::UniqueFd dir;  // the source dir, opened without symlinks; chowns go through it
  };

  std::optional<SetupFailure> prepare();
  std::optional<SetupFailure> spawn();
  int supervise();
  int fail(const SetupFailure& f);
  void idmap_or_chown();
  std::vector<std::pair<std::string, std::string>> mpl_seed_files() const;

  JailOptions options_;
  Policy policy_;
  ResolvedLimits limits_;
  UidSlot slot_;
  std::optional<Cgroup> cgroup_;
  std::vector<RwDir> rw_dirs_;
  StdioRelay relay_;  // stdout/stderr when they are host files
  std::optional<JailPlan> plan_;
  common::UniqueFd pidfd_, report_, sync_, exit_, signal_fd_;
  common::UniqueFd egress_;  // announced to cellgate-egress; the child sends its listener over it
  int egress_keep_fd_ = -1;  // where the init keeps that listener (the status file's egress_fd)
  pid_t init_pid_ = -1;
  pid_t kernel_pid_ = -1;
  int ready_fd_ = -1;
  bool killed_ = false;
  JailHooks hooks_;
};

}  // namespace cellgate::isolation
