// SPDX-License-Identifier: BSD-3-Clause
// spawn_util: posix_spawn with an exact environment, a new session and a log file for stdio.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "kernel-launcher/spawner.h"

namespace cellgate::launcher {

// posix_spawn(argv) in a new session with exactly env, cwd, stdin from /dev/null and stdout+stderr
// appended to log_path. When extra_fd >= 0 it is passed to the child as fd 3. Returns a handle with
// a pidfd. Never forks the (multi-threaded) gateway itself: posix_spawn uses vfork-style clone.
common::Result<ProcessHandle> spawn_process(const std::vector<std::string>& argv,
                                            const std::map<std::string, std::string>& env, const std::string& cwd,
                                            const std::string& log_path, int extra_fd);

// Resolves a bare program name against env's PATH (not the gateway's), as Popen(env=...) does.
std::string resolve_program(const std::string& prog, const std::map<std::string, std::string>& env);

// pidfd_open(2) for a pid; invalid fd on failure.
common::UniqueFd open_pidfd(pid_t pid);

}  // namespace cellgate::launcher
