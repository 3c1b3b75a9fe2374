// SPDX-License-Identifier: BSD-3-Clause
// gateway_metrics: the event-driven figures, and the hooks gateway code calls when events happen.
#pragma once

#include <cstdint>
#include <string_view>

#include "metrics/counters.h"
#include "metrics/cpu_ledger.h"
#include "metrics/labels.h"
#include "metrics/latency_histogram.h"

namespace cellgate::metrics {

// One per gateway, created before anything that reports into it and outliving it. Every hook is
// thread-safe and lock-free (relaxed atomic adds into fixed arrays) but iopub_message, the one on
// the per-message path, which is io-thread only and uses no locked instruction at all (~1 ns);
// none allocates or looks a label up. The exception is cpu(), the kernels' CPU ledger, which is
// io-thread only (the scrape and the kernel manager both run there).
// Figures that are read rather than counted (kernels by state, memory, the MCP queue, store bytes)
// are not here: the gateway reports them at scrape time in a Census (census.h).
class GatewayMetrics {
 public:
  GatewayMetrics();

  // Kernels.
  void kernel_started(StartPath path, double seconds) noexcept { start_seconds_[idx(path)].observe(seconds); }
  void kernel_start_failed(StartPath path) noexcept { start_failures_[path].add(); }
  void kernel_restarted(RestartReason reason) noexcept { restarts_[reason].add(); }
  void kernel_died() noexcept { deaths_.add(); }
  void kernel_oom_killed() noexcept { oom_kills_.add(); }
  void kernel_culled() noexcept { culls_.add(); }
  void kernel_paused() noexcept { pauses_.add(); }
  void kernel_resumed() noexcept { resumes_.add(); }
  void jail_failed(JailStage stage) noexcept { jail_failures_[stage].add(); }
  void jail_failed(std::string_view stage_word) noexcept { jail_failed(jail_stage_from_name(stage_word)); }

  // Traffic.
  void execute_done(double seconds) noexcept { execute_seconds_.observe(seconds); }
  // Io thread only (where kernels' messages are read).
  void iopub_message(uint64_t bytes) noexcept {
    iopub_messages_.add();
    iopub_bytes_.add(bytes);
  }
  void request_refused(RefusedReason reason) noexcept { refused_[reason].add(); }
  void egress_refused(EgressRefusal why, uint64_t n = 1) noexcept { egress_refused_[why].add(n); }

  // Storage.
  void snapshot_taken(double seconds) noexcept { snapshot_seconds_.observe(seconds); }
  void snapshot_restored(double seconds) noexcept { restore_seconds_.observe(seconds); }

  // Kernels' CPU time, kept monotonic across stops and restarts (cpu_ledger.h). Io thread only.
  CpuLedger& cpu() noexcept { return cpu_; }

  // Read side, for the exposition (exposition.h).
  const LatencyHistogram& start_seconds(StartPath p) const noexcept { return start_seconds_[idx(p)]; }
  const CounterByLabel<StartPath>& start_failures() const noexcept { return start_failures_; }
  const CounterByLabel<RestartReason>& restarts() const noexcept { return restarts_; }
  const Counter& deaths() const noexcept { return deaths_; }
  const Counter& oom_kills() const noexcept { return oom_kills_; }
  const Counter& culls() const noexcept { return culls_; }
  const Counter& pauses() const noexcept { return pauses_; }
  const Counter& resumes() const noexcept { return resumes_; }
  const CounterByLabel<JailStage>& jail_failures() const noexcept { return jail_failures_; }
  const LatencyHistogram& execute_seconds() const noexcept { return execute_seconds_; }
  const SingleWriterCounter& iopub_messages() const noexcept { return iopub_messages_; }
  const SingleWriterCounter& iopub_bytes() const noexcept { return iopub_bytes_; }
  const CounterByLabel<RefusedReason>& refused() const noexcept { return refused_; }
  const CounterByLabel<EgressRefusal>& egress_refused() const noexcept { return egress_refused_; }
  const LatencyHistogram& snapshot_seconds() const noexcept { return snapshot_seconds_; }
  const LatencyHistogram& restore_seconds() const noexcept { return restore_seconds_; }

 private:
  static constexpr size_t idx(StartPath p) noexcept { return static_cast<size_t>(p); }

  LatencyHistogram start_seconds_[static_cast<size_t>(StartPath::kCount)];
  CounterByLabel<StartPath> start_failures_;
  CounterByLabel<RestartReason> restarts_;
  Counter deaths_, oom_kills_, culls_, pauses_, resumes_;
  CounterByLabel<JailStage> jail_failures_;
  LatencyHistogram execute_seconds_;
  SingleWriterCounter iopub_messages_, iopub_bytes_;
  CounterByLabel<RefusedReason> refused_;
  CounterByLabel<EgressRefusal> egress_refused_;
  LatencyHistogram snapshot_seconds_;
  LatencyHistogram restore_seconds_;
  CpuLedger cpu_;
};

}  // namespace cellgate::metrics
