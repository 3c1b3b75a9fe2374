// SPDX-License-Identifier: BSD-3-Clause
// zygote_client: one request to the cellgate-zygote fork server (isolation/zygote_protocol.h),
// awaited on the io thread without blocking it.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "common/result.h"
#include "kernel-launcher/spawner.h"

namespace cellgate::launcher {

struct ZygoteOutcome {
  common::Result<ProcessHandle> handle;
  // Whether a cold start may replace this request: true only when no helper can exist for it (the
  // server was not reachable, refused it, or closed without answering while no copy of our ready
  // pipe's write end survives anywhere). A slow server still holding our request is not retried:
  // the helper it may yet start would share the kernel's runtime dir, sockets and cgroup name.
  bool may_fall_back = false;
};

// Asks the server at socket_path to start the jail `jail_args` (which must say --ready-fd 3), with
// stdin from /dev/null and stdout+stderr appended to log_path. Never blocks the calling thread: the
// connection, the send and the answer are awaited on the caller's executor, the answer for at most
// `timeout` (the server answers right after its fork, but it is one process serving every start,
// and a loaded host can leave it waiting for a core). Past it the start fails (kUnavailable), and
// the request is not forgotten: should the server still answer, the helper it started is killed at
// once (SIGUSR1: the helper kills its whole jail and removes its cgroup), so that no half-started
// jail outlives the start that gave up on it. The handle is like the jail spawner's: the helper's
// pid and pidfd (not our child), the ready pipe, the status file.
boost::asio::awaitable<ZygoteOutcome> zygote_spawn(const std::string& socket_path,
                                                   const std::vector<std::string>& jail_args,
                                                   const std::string& log_path, const std::string& status_file,
                                                   std::chrono::milliseconds timeout);

}  // namespace cellgate::launcher
