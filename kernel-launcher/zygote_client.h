// SPDX-License-Identifier: BSD-3-Clause
// zygote_client: one request to the cellgate-zygote fork server (isolation/zygote_protocol.h).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/result.h"
#include "kernel-launcher/spawner.h"

namespace cellgate::launcher {

struct ZygoteOutcome {
  common::Result<ProcessHandle> handle;
  // Whether a cold start may replace this request: true only when no helper can exist for it (the
  // server was not reachable, refused it, or closed without answering while no copy of our ready
  // pipe's write end survives anywhere). A slow server still holding our request is not retried.
  bool may_fall_back = false;
};

// Asks the server at socket_path to start the jail `jail_args` (which must say --ready-fd 3), with
// stdin from /dev/null and stdout+stderr appended to log_path. Blocks for at most `timeout` (the
// server answers right after its fork). The handle is like the jail spawner's: the helper's pid and
// pidfd (not our child), the ready pipe, the status file.
ZygoteOutcome zygote_spawn(const std::string& socket_path, const std::vector<std::string>& jail_args,
                           const std::string& log_path, const std::string& status_file,
                           std::chrono::milliseconds timeout);

}  // namespace cellgate::launcher
