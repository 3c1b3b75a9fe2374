// SPDX-License-Identifier: BSD-3-Clause
// fence_freezer: a fenced cluster node's kernels are frozen until its lease holds again.
#include "gateway/fence_freezer.h"

#include "common/log.h"
#include "gateway/kernel_hub.h"

namespace cellgate::gateway {

void FenceFreezer::fenced(bool down) {
  if (down) {
    for (const auto& [id, hub] : kernels_) {
      auto& k = hub->kernel();
      if (k.paused() || k.state() == launcher::KernelState::kDead) continue;
      if (auto st = k.pause(); !st) {
        // No freezer here (the plain spawner, a host without one): the fence still refuses its traffic.
        common::log_warn("kernel={} msg=\"cannot freeze the kernel of a fenced node\" error=\"{}\"", id,
                         st.error().message);
        continue;
      }
      frozen_.insert(id);
    }
    if (!frozen_.empty()) common::log_warn("msg=\"fenced: kernels frozen\" kernels={}", frozen_.size());
    return;
  }
  size_t thawed = 0;
  for (const auto& id : frozen_) {
    auto it = kernels_.find(id);
    if (it == kernels_.end() || !it->second->kernel().paused()) continue;
    it->second->kernel().resume();
    ++thawed;
  }
  frozen_.clear();
  if (thawed > 0) common::log_info("msg=\"lease holds again: kernels thawed\" kernels={}", thawed);
}

}  // namespace cellgate::gateway
