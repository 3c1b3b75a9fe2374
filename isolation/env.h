// SPDX-License-Identifier: BSD-3-Clause
// env: the kernel's environment, built from scratch (nothing inherited), and the PATH search.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace cellgate::isolation {

using EnvList = std::vector<std::pair<std::string, std::string>>;

// Defaults, then the policy's entries, then the command line's (later wins; one entry per key).
// Returns "K=V" strings in first-seen key order.
std::vector<std::string> build_env(const EnvList& policy_env, const EnvList& option_env);
// The absolute paths to try for command[0]: itself if it contains '/', else each PATH dir.
std::vector<std::string> exec_candidates(const std::string& command, const std::vector<std::string>& env);

}  // namespace cellgate::isolation
