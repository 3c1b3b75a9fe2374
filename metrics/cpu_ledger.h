// SPDX-License-Identifier: BSD-3-Clause
// cpu_ledger: kernels' CPU time as a counter that never goes down when a kernel stops or restarts.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>

namespace cellgate::metrics {

// A kernel's cgroup counts the CPU of its current process only: it goes away when the kernel stops
// and starts from zero when it restarts. Summed over the running kernels, cellgate_kernel_cpu_seconds_total
// would drop, which Prometheus's rate() reads as a counter reset and turns into a spike.
// The ledger keeps the highest reading of each kernel process (a kernel id and its pid) and, when
// a process is no longer running, moves that reading into a retired total, per owner. So the total
// only grows. CPU a process used after its last reading (a scrape, or the sample taken just before
// a shutdown or restart) is not counted: a kernel that dies on its own takes its cgroup with it.
// Bounded: one entry per running kernel process, and one retired figure per owner. Sums are kept in
// whole microseconds, so that moving a reading into the retired total cannot lower the sum by a
// rounding error (Prometheus reads any decrease of a counter as a reset).
// Io thread only.
class CpuLedger {
 public:
  struct Process {
    std::string kernel_id;
    int pid = 0;
    auto operator<=>(const Process&) const = default;
  };
  // A reading of the process's cgroup (seconds). A zero (no cgroup, or it is gone) changes nothing.
  void observe(const Process& process, const std::string& owner, double seconds);
  // Retires every process not in `running` (kernels stopped, restarted, died).
  void retire_all_but(const std::set<Process>& running);
  // The retired total plus the highest reading of each running process.
  double total() const;
  // The same, for one owner.
  std::map<std::string, double> by_owner() const;

 private:
  struct Reading {
    std::string owner;
    uint64_t micros = 0;
  };
  std::map<Process, Reading> running_;
  std::map<std::string, uint64_t> retired_;  // by owner, microseconds
};

}  // namespace cellgate::metrics
