// SPDX-License-Identifier: BSD-3-Clause
// jail_entry: cellgate-jail's whole command line → exit code, shared by the helper binary and the
// fork server (kernels/zygote), whose children become helpers without an execve.
#pragma once

#include "isolation/child/run_child.h"

namespace cellgate::isolation {

// What the fork server changes in an otherwise ordinary jail.
struct JailHooks {
  // The kernel process calls this instead of execve (see child::ChildPlan::enter); nullptr = execve.
  void (*enter)(const child::ChildPlan& plan) noexcept = nullptr;
  // Runs in the helper right after the clone that made the jail's init (e.g. to rename the helper,
  // which the init copied as it was); nullptr = nothing.
  void (*spawned)() = nullptr;
  // Memory the helper and init give up once the jail runs (child::ChildPlan::shed): the fork
  // server's Python image, which only the kernel uses. The helper unmaps it after the ready line.
  const child::MemRange* shed = nullptr;
  size_t n_shed = 0;
};

// Parses argv (argv[0] is the program name), builds and supervises one jail (or runs --join),
// returns the helper's exit code (125 bad options, 126 setup failure, else the command's).
// With an enter hook, --join and --help are refused (exit 125): the fork server only builds jails.
int jail_main(int argc, char** argv, const JailHooks& hooks = {});

}  // namespace cellgate::isolation
