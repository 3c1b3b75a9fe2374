// SPDX-License-Identifier: BSD-3-Clause
// kernel_manager_events: what the manager tells about its kernels: their model (GET /api/kernels),
// the event stream (GET /api/events) and the metrics.
#include "common/log.h"
#include "gateway/kernel_manager.h"

namespace cellgate::gateway {

using nlohmann::json;

void KernelManager::sample_cpu(KernelHub& hub) {
  auto& k = hub.kernel();
  if (!services_.metrics || k.state() == launcher::KernelState::kDead || k.process().pid <= 0) return;
  services_.metrics->cpu().observe({k.id(), k.process().pid}, hub.owner, k.spawner().cpu_seconds(k.process()));
}

void KernelManager::publish(events::EventType type, const KernelHub& hub, json data) {
  if (!services_.events || hub.owner.empty() || hub.owner == kPoolOwner) return;
  auto& k = const_cast<KernelHub&>(hub).kernel();
  data["kernel_id"] = k.id();
  data["kernelspec"] = k.name();
  if (!hub.workspace.empty()) data["workspace"] = hub.workspace;
  services_.events->publish(type, hub.owner, std::move(data));
}

KernelHub::LifecycleHook KernelManager::lifecycle_hook(KernelHub& hub) {
  // The hub owns the hook, so &hub outlives it; the manager outlives every hub's callbacks (the io
  // thread runs none after the gateway stops).
  return [this, &hub](KernelHub::Lifecycle what, const std::string& reason) {
    auto* m = services_.metrics;
    switch (what) {
      case KernelHub::Lifecycle::kPaused:
        if (m) m->kernel_paused();
        publish(events::EventType::kKernelPaused, hub, {});
        break;
      case KernelHub::Lifecycle::kResumed:
        if (m) m->kernel_resumed();
        publish(events::EventType::kKernelResumed, hub, {});
        break;
      case KernelHub::Lifecycle::kAutoRestart:
        if (m) m->kernel_restarted(reason.find("heartbeat") != std::string::npos ? metrics::RestartReason::kHeartbeat
                                                                                 : metrics::RestartReason::kDied);
        publish(events::EventType::kKernelRestarted, hub, {{"reason", reason}, {"automatic", true}});
        break;
      case KernelHub::Lifecycle::kDied:
        if (m) {
          m->kernel_died();
          // isolation/cgroup.cc's exit reason for a kernel its memory cgroup OOM-killed.
          if (reason.starts_with("memory limit ")) m->kernel_oom_killed();
        }
        publish(events::EventType::kKernelDied, hub, {{"reason", reason}});
        break;
    }
  };
}

json KernelManager::model(const KernelHub& hub) const {
  auto& k = const_cast<KernelHub&>(hub).kernel();
  json m = {{"id", k.id()},
            {"name", k.name()},
            {"last_activity", common::iso8601(k.last_activity())},
            {"execution_state", launcher::to_string(k.state())},
            {"paused", k.paused()},
            {"connections", hub.connections()},
            {"owner", hub.owner},
            {"workspace", hub.workspace},
            {"network", hub.network}};
  if (k.state() != launcher::KernelState::kDead && k.process().pid > 0) {
    // From the kernel's cgroup (jailed kernels; a plain kernel has none): two small reads.
    if (const uint64_t memory = k.spawner().memory_usage(k.process())) m["memory_bytes"] = memory;
    if (const double cpu = k.spawner().cpu_seconds(k.process()); cpu > 0) m["cpu_seconds"] = cpu;
  }
  if (!k.reason().empty() && k.reason() != "shutdown") m["reason"] = k.reason();
  return m;
}

void KernelManager::count_start_failure(std::string_view error) {
  auto* m = services_.metrics;
  if (!m) return;
  m->kernel_start_failed(config_.fork_server && config_.spawner == "jail" ? metrics::StartPath::kForkServer
                                                                          : metrics::StartPath::kCold);
  // cellgate-jail reports a setup step that failed as "cellgate-jail: <stage>: <message>" (jail_help.cc).
  if (const auto at = error.find("cellgate-jail: "); at != std::string_view::npos) {
    const auto from = at + 15, colon = error.find(':', from);
    if (colon != std::string_view::npos) m->jail_failed(error.substr(from, colon - from));
  }
}

}  // namespace cellgate::gateway
