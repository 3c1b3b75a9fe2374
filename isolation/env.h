// SPDX-License-Identifier: BSD-3-Clause
// env: the kernel's environment, built from scratch (nothing inherited), and the PATH search.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace cellgate::isolation {

using EnvList = std::vector<std::pair<std::string, std::string>>;

// Defaults, then the policy's entries, then the command line's (later wins; one entry per key).
// Returns "K=V" strings in first-seen key order.
std::vector<std::string> build_env(const EnvList& policy_env, const EnvList& option_env);
// Reads an environment file: "K=V" entries each ended by a NUL byte (as /proc/PID/environ), from a
// regular file (no symlink) of at most 1 MiB; appends them to out, at most max_entries in all.
// kBadRequest naming the file and what is wrong. Values given this way never reach a command line.
common::Status read_env_file(const std::string& path, EnvList& out, size_t max_entries);
// The absolute paths to try for command[0]: itself if it contains '/', else each PATH dir.
std::vector<std::string> exec_candidates(const std::string& command, const std::vector<std::string>& env);

}  // namespace cellgate::isolation
