// SPDX-License-Identifier: BSD-3-Clause
// kernel_plan: the launcher::KernelOptions of a kernel, decided from the config, its kernelspec's
// metadata.cellgate and its owner: a cold start, a warm-pool kernel, a re-adopted one. Pure.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "gateway/config.h"
#include "kernel-launcher/kernel_options.h"
#include "state/kernel_records.h"
#include "state/users.h"

namespace cellgate::gateway {

// Transport, jail policy, limits and timeouts from the config, then the kernelspec's own
// metadata.cellgate {policy, memory, pids, cpus}.
void apply_kernelspec_policy(const Config& config, const std::shared_ptr<launcher::ReadBudget>& budget,
                             launcher::KernelOptions& options);
// Heartbeat and freezer from the config.
void apply_liveness(const Config& config, launcher::KernelOptions& options);
// Seconds idle before the kernel is paused: its kernelspec's metadata.cellgate.pause_after, else the
// config's (0 = never).
int pause_after_for(const Config& config, const launcher::KernelSpec& spec);
// The per-execute limit for a kernel of user (the user's own, else the config's; 0 = none).
int64_t execute_limit_for(const Config& config, const state::User* user);

// A cold start of spec for user on the workspace tree at workspace_dir. client_env is already filtered;
// identity (KERNEL_ID, KERNEL_USERNAME, KERNEL_WORKSPACE) comes from the token, never from the client.
launcher::KernelOptions cold_start_plan(const Config& config, const std::shared_ptr<launcher::ReadBudget>& budget,
                                        const std::string& kernel_id, const launcher::KernelSpec& spec,
                                        const state::User& user, const std::string& workspace_name,
                                        const std::string& workspace_dir,
                                        const std::map<std::string, std::string>& client_env);
// A warm-pool kernel: no workspace (its /workspace is an empty tmpfs until a claim mounts one), no
// auto-restart (a pooled kernel that dies is replaced).
launcher::KernelOptions pool_plan(const Config& config, const std::shared_ptr<launcher::ReadBudget>& budget,
                                  const std::string& kernel_id, const launcher::KernelSpec& spec);
// A kernel found in the database at start, as it was started (what the client passed is not stored:
// tools' processes get the defaults).
launcher::KernelOptions adoption_plan(const Config& config, const std::shared_ptr<launcher::ReadBudget>& budget,
                                      const state::KernelRecord& record,
                                      const std::map<std::string, launcher::KernelSpec>& specs);

}  // namespace cellgate::gateway
