// SPDX-License-Identifier: BSD-3-Clause
// idle_watch: freezes kernels idle past their pause_after (cgroup freezer) and culls those idle past
// the cull timeout.
#include "gateway/idle_watch.h"

#include <algorithm>
#include <vector>

#include <fmt/core.h>

#include "common/log.h"

namespace cellgate::gateway {

namespace {
// How often to look for kernels to pause: a quarter of the configured delay, within [0.25 s, 5 s] (a
// kernelspec's own pause_after is honoured to within 5 s).
std::chrono::milliseconds pause_scan_interval(int pause_after_s) {
  if (pause_after_s <= 0) return std::chrono::seconds(5);
  return std::clamp<std::chrono::milliseconds>(std::chrono::milliseconds(pause_after_s * 250), std::chrono::milliseconds(250),
                                               std::chrono::seconds(5));
}
}  // namespace

IdleWatch::IdleWatch(boost::asio::io_context& io, IdleOptions options, const Kernels& kernels,
                     std::function<void(const std::string&)> cull)
    : options_(options), kernels_(kernels), cull_(std::move(cull)), cull_timer_(io), pause_timer_(io) {}

void IdleWatch::start() {
  schedule_cull();
  schedule_pause();
}

void IdleWatch::stop() {
  cull_timer_.cancel();
  pause_timer_.cancel();
}

void IdleWatch::schedule_cull() {
  if (options_.cull_idle_timeout_s <= 0) return;
  cull_timer_.expires_after(std::chrono::seconds(options_.cull_interval_s));
  cull_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    auto now = std::chrono::system_clock::now();
    std::vector<std::string> victims;
    for (const auto& [id, hub] : kernels_) {
      auto& k = hub->kernel();
      // A kernel still starting has had no chance to be used (a slow start must not be culled).
      if (k.state() == launcher::KernelState::kStarting || k.state() == launcher::KernelState::kRestarting) continue;
      if (k.state() == launcher::KernelState::kBusy && !options_.cull_busy) continue;
      if (hub->connections() > 0 && !options_.cull_connected) continue;
      if (now - k.last_activity() > std::chrono::seconds(options_.cull_idle_timeout_s)) victims.push_back(id);
    }
    for (const auto& id : victims) {
      kernels_.at(id)->notify_clients(
          fmt::format("kernel culled after {} s idle (its workspace is kept)", options_.cull_idle_timeout_s));
      common::log_info("kernel={} msg=\"culling idle kernel\"", id);
      cull_(id);
    }
    schedule_cull();
  });
}

void IdleWatch::schedule_pause() {
  pause_timer_.expires_after(pause_scan_interval(options_.pause_after_s));
  pause_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    const auto now = std::chrono::system_clock::now();
    for (const auto& [id, hub] : kernels_) {
      auto& k = hub->kernel();
      // Idle means: no message either way for pause_after, and the kernel said idle. A kernel with
      // an agent request or a cell in flight is busy, so it is never frozen mid-execution.
      if (hub->pause_after_s <= 0 || k.paused() || k.state() != launcher::KernelState::kIdle) continue;
      if (hub->requests_in_flight > 0 || hub->awaiting_kernel()) continue;
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
