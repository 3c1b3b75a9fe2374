// SPDX-License-Identifier: BSD-3-Clause
// jail_args: the cellgate-jail command line for one kernel (shared by the jail and zygote spawners).
#pragma once

#include <string>
#include <vector>

#include "kernel-launcher/spawner.h"

namespace cellgate::launcher {

// Everything after the helper's argv[0]: --name, the kernel's runtime dir (--bind-same), the status
// file (outside the kernel's reach), --ready-fd ready_fd, workspace, policy, limits, the egress proxy, `extra`, the
// kernel's exact environment (--env), then `--` and the kernel's argv.
std::vector<std::string> jail_args(const SpawnRequest& req, const std::vector<std::string>& extra, int ready_fd);
// Where the helper writes its status for this request.
std::string jail_status_file(const SpawnRequest& req);

}  // namespace cellgate::launcher
