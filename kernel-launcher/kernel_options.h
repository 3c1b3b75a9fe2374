// SPDX-License-Identifier: BSD-3-Clause
// kernel_options: everything that defines one kernel's launch, decided by the gateway.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "kernel-launcher/kernelspec.h"
#include "kernel-launcher/read_budget.h"
#include "kernel-launcher/spawner.h"

namespace cellgate::launcher {

struct KernelOptions {
  std::string kernel_id;
  KernelSpec spec;
  std::map<std::string, std::string> env;  // the complete kernel environment (see kernel_env.h)
  std::string runtime_dir;                 // per-kernel host dir shared with the kernel; created and removed by Kernel
  std::string private_dir;                 // per-kernel host dir the kernel never sees (status file, log)
  std::string workspace_dir;               // the kernel's cwd
  std::string transport = "ipc";           // "ipc" (default) or "tcp"
  std::string policy_file;
  Limits limits;
  EgressEndpoint egress;                   // the kernel's network (jail spawners only); see egress_env.h
  std::string cgroup_owner;                // the cgroup level the jail goes under (jail spawners only): the
                                           // owner's kernels share one CPU weight; "" = none
  std::chrono::milliseconds start_timeout{60000};
  std::chrono::milliseconds shutdown_grace{3000};  // per step: shutdown_request, SIGTERM, kill
  std::chrono::milliseconds heartbeat_interval{3000};
  std::chrono::milliseconds heartbeat_timeout{30000};  // no hb reply for this long while alive → restart
  int max_rapid_restarts = 5;              // jupyter_client's restart_limit
  bool auto_restart = true;
  Freezer freezer = Freezer::kAuto;        // how pause() freezes the kernel's cgroup
  uint64_t max_message_bytes = 512ull << 20;  // larger kernel messages are dropped (with a notice)
  std::shared_ptr<ReadBudget> read_budget;     // shared by all kernels; null = only the bound above
  uint64_t output_rate = 0;                    // iopub bytes per second the gateway reads (read_pace.h); 0 = unpaced
};

}  // namespace cellgate::launcher
