// SPDX-License-Identifier: BSD-3-Clause
// kernel_env: a kernel's environment, built from scratch; the gateway's own never leaks in.
#pragma once

#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "kernel-launcher/kernelspec.h"

namespace cellgate::launcher {

// Validates a client's `env` object from POST /api/kernels: names [A-Za-z_][A-Za-z0-9_]*, values strings of
// at most 4096 bytes without NUL. Only KERNEL_* names and names in `allowed` are kept; others are dropped
// (and listed in `dropped` when given). Errors (kBadRequest) for malformed input.
common::Result<std::map<std::string, std::string>> filter_client_env(const nlohmann::json& env,
                                                                      const std::set<std::string>& allowed,
                                                                      std::set<std::string>* dropped = nullptr);

// The environment a kernel starts with: fixed defaults (PATH, LANG, TERM, HOME, MPLBACKEND, …), then the
// kernelspec's env with ${VAR} substituted from what is built so far (never from the gateway's
// environment), then the filtered client env, then `forced` (e.g. KERNEL_ID), which always wins.
std::map<std::string, std::string> build_kernel_env(const KernelSpec& spec,
                                                    const std::map<std::string, std::string>& client_env,
                                                    const std::map<std::string, std::string>& forced);

// Replaces ${NAME} with vars[NAME] ("" when absent).
std::string substitute_vars(const std::string& text, const std::map<std::string, std::string>& vars);

}  // namespace cellgate::launcher
