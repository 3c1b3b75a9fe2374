// SPDX-License-Identifier: BSD-3-Clause
// metrics_sample: prints a full exposition with every family populated, for `promtool check metrics`.
#include <cstdio>

#include "metrics/exposition.h"

int main() {
  using namespace cellgate::metrics;
  GatewayMetrics m;
  m.kernel_started(StartPath::kCold, 0.6);
  m.kernel_started(StartPath::kWarmPool, 0.012);
  m.kernel_restarted(RestartReason::kDied);
  m.jail_failed("pivot_root");
  m.execute_done(0.004);
  m.iopub_message(120);
  m.request_refused(RefusedReason::kQuota);
  m.snapshot_taken(0.03);
  Census c;
  c.kernels = {{"python3", KernelState::kIdle, 2}, {"xpython", KernelState::kPaused, 1}};
  c.users = {{"ana", 2, 1, 100 << 20, 1.5, 4096}};
  std::fputs(render(m, c, ExpositionOptions{true, "0.1.0"}).c_str(), stdout);
}
