// SPDX-License-Identifier: BSD-3-Clause
// jail_args: the cellgate-jail command line for one kernel (shared by the jail and zygote spawners).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "kernel-launcher/spawner.h"

namespace cellgate::launcher {

// Everything after the helper's argv[0]: --name, the kernel's runtime dir (--bind-same), the status
// file (outside the kernel's reach), --ready-fd ready_fd, workspace, policy, limits, the egress proxy,
// `extra`, the kernel's environment file (--env-file jail_env_file: never values on a command line,
// which every host user can read in ps), then `--` and the kernel's argv.
std::vector<std::string> jail_args(const SpawnRequest& req, const std::vector<std::string>& extra, int ready_fd);
// Where the helper writes its status for this request.
std::string jail_status_file(const SpawnRequest& req);
// Where the kernel's environment is written for the helper (in the private dir, mode 0600).
std::string jail_env_file(const SpawnRequest& req);
// Writes `env` as NUL-ended "K=V" entries to path (0600, replaced atomically). kInternal on error.
common::Status write_env_file(const std::string& path, const std::map<std::string, std::string>& env);

}  // namespace cellgate::launcher
