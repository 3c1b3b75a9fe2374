// SPDX-License-Identifier: BSD-3-Clause
// spawn_util: posix_spawn with an exact environment, a new session and a log file for stdio.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "kernel-launcher/spawner.h"

namespace cellgate::launcher {

// posix_spawn(argv) in a new session, with default signal dispositions, an empty signal mask and
// exactly env (argv[0] resolved against env's PATH). Child fd i is the parent's child_fds[i]; every
// other fd is closed. Each child_fds[i] must be i or >= child_fds.size(), so no dup2 clobbers a later
// source. Never forks the (multi-threaded) gateway itself: posix_spawn uses a vfork-style clone.
common::Result<pid_t> spawn_in_session(const std::vector<std::string>& argv,
                                       const std::map<std::string, std::string>& env, const std::string& cwd,
                                       const std::vector<int>& child_fds);

// posix_spawn(argv) in a new session with exactly env, cwd, stdin from /dev/null and stdout+stderr
// appended to log_path. When extra_fd >= 0 it is passed to the child as fd 3. Returns a handle with
// a pidfd.
common::Result<ProcessHandle> spawn_process(const std::vector<std::string>& argv,
                                            const std::map<std::string, std::string>& env, const std::string& cwd,
                                            const std::string& log_path, int extra_fd);

// Resolves a bare program name against env's PATH (not the gateway's), as Popen(env=...) does.
std::string resolve_program(const std::string& prog, const std::map<std::string, std::string>& env);

// pidfd_open(2) for a pid; invalid fd on failure.
common::UniqueFd open_pidfd(pid_t pid);

}  // namespace cellgate::launcher
