// SPDX-License-Identifier: BSD-3-Clause
// idle_pause: freezes kernels that stayed idle past their pause_after (cgroup freezer, memory kept).
#include <algorithm>

#include "common/log.h"
#include "gateway/gateway.h"

namespace cellgate::gateway {

namespace {
// How often to look: a quarter of the configured delay, within [0.25 s, 5 s] (a kernelspec's own
// pause_after is honoured to within 5 s).
std::chrono::milliseconds scan_interval(int pause_after_s) {
  if (pause_after_s <= 0) return std::chrono::seconds(5);
  return std::clamp<std::chrono::milliseconds>(std::chrono::milliseconds(pause_after_s * 250), std::chrono::milliseconds(250),
                                               std::chrono::seconds(5));
}
}  // namespace

void Gateway::schedule_pause() {
  if (!pause_timer_) pause_timer_ = std::make_unique<boost::asio::steady_timer>(io_);
  pause_timer_->expires_after(scan_interval(config_.pause_after_s));
  pause_timer_->async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    const auto now = std::chrono::system_clock::now();
    for (const auto& [id, hub] : kernels_) {
      auto& k = hub->kernel();
      // Idle means: no message either way for pause_after, and the kernel said idle. A kernel with
      // an agent request or a cell in flight is busy, so it is never frozen mid-execution.
      if (hub->pause_after_s <= 0 || k.paused() || k.state() != launcher::KernelState::kIdle) continue;
      if (hub->requests_in_flight > 0) continue;
      if (now - k.last_activity() < std::chrono::seconds(hub->pause_after_s)) continue;
      if (auto st = k.pause(); !st) {
        common::log_warn("kernel={} msg=\"cannot pause kernel\" error=\"{}\"", id, st.error().message);
        // No freezer (plain spawner, a host without one): never retry this kernel.
        if (st.error().code == common::Errc::kUnavailable) hub->pause_after_s = 0;
      }
    }
    schedule_pause();
  });
}

}  // namespace cellgate::gateway
