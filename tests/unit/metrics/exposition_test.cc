// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include <string>

#include "metrics/exposition.h"

using namespace cellgate::metrics;

namespace {
bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}
}  // namespace

TEST_CASE("the exposition carries every event-driven family with its labels", "[metrics]") {
  GatewayMetrics m;
  m.kernel_started(StartPath::kForkServer, 0.15);
  m.kernel_started(StartPath::kForkServer, 0.2);
  m.kernel_start_failed(StartPath::kCold);
  m.kernel_restarted(RestartReason::kHeartbeat);
  m.kernel_oom_killed();
  m.kernel_culled();
  m.kernel_paused();
  m.kernel_resumed();
  m.jail_failed("seccomp");
  m.execute_done(0.003);
  m.iopub_message(100);
  m.iopub_message(28);
  m.request_refused(RefusedReason::kAuth);
  m.snapshot_restored(1.5);
  const std::string t = render(m, Census{}, ExpositionOptions{false, "1.2.3"});

  CHECK(has_line(t, "cellgate_build_info{version=\"1.2.3\"} 1"));
  CHECK(has_line(t, "# TYPE cellgate_kernel_start_seconds histogram"));
  CHECK(has_line(t, "cellgate_kernel_start_seconds_count{path=\"fork_server\"} 2"));
  CHECK(has_line(t, "cellgate_kernel_start_seconds_bucket{path=\"fork_server\",le=\"0.25\"} 2"));
  CHECK(has_line(t, "cellgate_kernel_start_seconds_bucket{path=\"fork_server\",le=\"0.1\"} 0"));
  CHECK(has_line(t, "cellgate_kernel_start_seconds_bucket{path=\"fork_server\",le=\"+Inf\"} 2"));
  CHECK(has_line(t, "cellgate_kernel_start_seconds_count{path=\"warm_pool\"} 0"));
  CHECK(has_line(t, "cellgate_kernel_start_failures_total{path=\"cold\"} 1"));
  CHECK(has_line(t, "cellgate_kernel_restarts_total{reason=\"heartbeat\"} 1"));
  CHECK(has_line(t, "cellgate_kernel_restarts_total{reason=\"requested\"} 0"));
  CHECK(has_line(t, "cellgate_kernel_oom_kills_total 1"));
  CHECK(has_line(t, "cellgate_kernel_culls_total 1"));
  CHECK(has_line(t, "cellgate_kernel_pauses_total 1"));
  CHECK(has_line(t, "cellgate_jail_failures_total{stage=\"seccomp\"} 1"));
  CHECK(has_line(t, "cellgate_execute_seconds_count 1"));
  CHECK(has_line(t, "cellgate_iopub_bytes_total 128"));
  CHECK(has_line(t, "cellgate_iopub_messages_total 2"));
  CHECK(has_line(t, "cellgate_websockets_open 0"));
  CHECK(has_line(t, "cellgate_requests_refused_total{reason=\"auth\"} 1"));
  CHECK(has_line(t, "cellgate_restore_seconds_sum 1.5"));
  CHECK(t.find("process_cpu_seconds_total") != std::string::npos);
  CHECK(t.find("process_open_fds") != std::string::npos);
}

TEST_CASE("census figures: every state of a kernelspec, zeros included", "[metrics]") {
  Census c;
  c.kernels = {{"python3", KernelState::kIdle, 3}, {"python3", KernelState::kPaused, 1},
               {"python3", KernelState::kIdle, 1}};
  c.mcp_waiting = 4;
  c.store_bytes = 1 << 20;
  const std::string t = render(GatewayMetrics{}, c, ExpositionOptions{});
  CHECK(has_line(t, "cellgate_kernels{kernelspec=\"python3\",state=\"idle\"} 4"));
  CHECK(has_line(t, "cellgate_kernels{kernelspec=\"python3\",state=\"paused\"} 1"));
  CHECK(has_line(t, "cellgate_kernels{kernelspec=\"python3\",state=\"busy\"} 0"));
  CHECK(has_line(t, "cellgate_mcp_calls_waiting 4"));
  CHECK(has_line(t, "cellgate_store_bytes 1048576"));
}

TEST_CASE("per-user figures appear only when asked for, with label values escaped", "[metrics]") {
  Census c;
  c.users = {{"ana", 2, 1, 4096, 0.5, 10}, {"b\"o\\b\n", 1, 0, 0, 0, 0}};
  const std::string off = render(GatewayMetrics{}, c, ExpositionOptions{});
  CHECK(off.find("cellgate_user_") == std::string::npos);
  const std::string on = render(GatewayMetrics{}, c, ExpositionOptions{true, ""});
  CHECK(has_line(on, "cellgate_user_kernels{user=\"ana\"} 2"));
  CHECK(has_line(on, "cellgate_user_memory_bytes{user=\"ana\"} 4096"));
  // A hostile name cannot end the line or the label early.
  CHECK(has_line(on, "cellgate_user_kernels{user=\"b\\\"o\\\\b\\n\"} 1"));
}
