// SPDX-License-Identifier: BSD-3-Clause
// pool_claim: the code a warm-pool kernel runs in its own language, as policy in its kernelspec:
// metadata.cellgate.claim (enter /workspace, set the owner's KERNEL_* variables) and .warmup.
#pragma once

#include <map>
#include <string>

#include "common/result.h"
#include "kernel-launcher/kernelspec.h"

namespace cellgate::gateway {

// What the gateway runs in a pooled kernel. The mechanism (mount the workspace from outside, write the
// cgroup's limits, run this code as a hidden cell, judge its result) is the gateway's; what the code
// says is the kernelspec's, since no system call moves another process's cwd.
struct ClaimCode {
  std::string language;
  // Runs once, when an owner claims the kernel: must enter /workspace and set the variables. Holds the
  // placeholder {env} exactly once, replaced by a string literal of the kernel's language
  // (launcher::string_literal) holding a JSON object {"NAME": "value"} of the variables to set.
  std::string claim;
  std::string warmup;  // runs once while the kernel is still the pool's (first-execute costs); "" = none
};

// The kernelspec's metadata.cellgate {claim, warmup}; for a Python kernelspec without its own, the
// built-in Python claim and a `pass` warm-up. An error (one line naming the kernelspec and the key) when
// there is no claim, a key is not a string, {env} is not there exactly once, or cellgate has no checked
// string literal for the language.
common::Result<ClaimCode> claim_code_for(const launcher::KernelSpec& spec);

// The claim with the variables in place of {env}.
std::string claim_cell(const ClaimCode& code, const std::map<std::string, std::string>& env);

}  // namespace cellgate::gateway
