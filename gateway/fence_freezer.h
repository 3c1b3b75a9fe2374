// SPDX-License-Identifier: BSD-3-Clause
// fence_freezer: a cluster node that cannot renew its lease freezes its kernels (the cgroup freezer, as
// --pause-after does), so that none of them goes on writing to its workspace or the network while the
// other nodes may declare this node lost, restore the workspace and start its next kernel elsewhere
// (docs/cluster.md §3). The fence already stops the node serving them; this stops the kernels.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>

namespace cellgate::gateway {

class KernelHub;

// Io thread only.
class FenceFreezer {
 public:
  explicit FenceFreezer(const std::map<std::string, std::shared_ptr<KernelHub>>& kernels) : kernels_(kernels) {}

  // down: freezes every running kernel not paused already. Up: thaws what it froze and still runs
  // (a kernel paused for idleness before stays paused; one declared dead meanwhile is gone).
  void fenced(bool down);

 private:
  const std::map<std::string, std::shared_ptr<KernelHub>>& kernels_;
  std::set<std::string> frozen_;
};

}  // namespace cellgate::gateway
