// SPDX-License-Identifier: BSD-3-Clause
// census: the figures read at scrape time rather than counted (kernels by state, memory, queues).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "metrics/labels.h"

namespace cellgate::metrics {

// Kernels of one kernelspec in one state. Kernelspecs are the admin's, so this stays bounded.
struct KernelCount {
  std::string kernelspec;
  KernelState state = KernelState::kIdle;
  uint64_t kernels = 0;
};

// One user's figures; only reported with --metrics-per-user (a label value per user).
struct UserFigures {
  std::string user;
  uint64_t kernels = 0;
  uint64_t websockets = 0;
  uint64_t memory_bytes = 0;      // the sum of their kernels' cgroup memory.current
  double cpu_seconds = 0;         // their kernels' CPU time, stopped ones' included (cpu_ledger.h)
  uint64_t workspace_bytes = 0;
};

// What the gateway reports when scraped. It fills this on its own thread from the tables it
// already keeps; nothing here walks the store or the workspaces at scrape time.
struct Census {
  std::vector<KernelCount> kernels;
  uint64_t warm_pool_ready = 0;
  uint64_t kernel_memory_bytes = 0;   // all kernels' cgroups
  double kernel_cpu_seconds = 0;     // every kernel's, stopped ones' included (cpu_ledger.h)
  uint64_t websockets = 0;            // open kernel WebSockets
  uint64_t mcp_running = 0;
  uint64_t mcp_waiting = 0;
  uint64_t store_bytes = 0;           // the snapshot store's objects, as last measured
  uint64_t store_objects = 0;
  uint64_t workspace_bytes = 0;       // all live workspaces, as last scanned
  std::vector<UserFigures> users;     // dropped unless per-user figures are on
};

}  // namespace cellgate::metrics
