// SPDX-License-Identifier: BSD-3-Clause
// kernel_pause: pausing an idle kernel (cgroup freezer) and handing a pooled kernel to its owner.
#include <fmt/core.h>

#include "common/log.h"
#include "kernel-launcher/kernel.h"

namespace cellgate::launcher {

using common::Errc;
using common::make_error;

common::Status Kernel::pause() {
  if (paused_) return common::ok();
  if (state_ != KernelState::kIdle || process_.pid <= 0 || stopping_)
    return make_error(Errc::kConflict, fmt::format("kernel is {}, not idle", to_string(state_)));
  if (auto st = spawner_.freeze(process_, true, options_.freezer); !st) return st;
  paused_ = true;
  common::log_info("kernel={} msg=\"kernel paused\"", id());
  if (observer_) observer_->on_kernel_paused(true);
  return common::ok();
}

void Kernel::resume() {
  if (!paused_) return;
  paused_ = false;
  hb_last_reply_ = std::chrono::steady_clock::now();
  if (auto st = spawner_.freeze(process_, false, options_.freezer); !st)
    common::log_error("kernel={} msg=\"thaw failed\" error=\"{}\"", id(), st.error().message);
  else
    common::log_info("kernel={} msg=\"kernel resumed\"", id());
  if (observer_) observer_->on_kernel_paused(false);
}

void Kernel::retarget(std::string workspace_dir, std::map<std::string, std::string> env, Limits limits) {
  options_.workspace_dir = std::move(workspace_dir);
  options_.env = std::move(env);
  options_.limits = limits;
}

}  // namespace cellgate::launcher
