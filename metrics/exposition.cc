// SPDX-License-Identifier: BSD-3-Clause
// exposition: the Prometheus text format of the gateway's figures, through prometheus-cpp.
#include "metrics/exposition.h"

#include <array>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>
#include <prometheus/metric_type.h>
#include <prometheus/text_serializer.h>

#include "metrics/process_figures.h"

namespace cellgate::metrics {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::vector<ClientMetric::Label>;

// The families in the order they are rendered; each helper appends one sample.
class Families {
 public:
  MetricFamily& add(std::string name, std::string help, MetricType type) {
    families_.push_back(MetricFamily{std::move(name), std::move(help), type, {}});
    return families_.back();
  }
  std::vector<MetricFamily> take() { return std::move(families_); }

 private:
  std::vector<MetricFamily> families_;
};

void counter(MetricFamily& f, Labels labels, double value) {
  ClientMetric m;
  m.label = std::move(labels);
  m.counter.value = value;
  f.metric.push_back(std::move(m));
}

void gauge(MetricFamily& f, Labels labels, double value) {
  ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = value;
  f.metric.push_back(std::move(m));
}

void histogram(MetricFamily& f, Labels labels, const LatencyHistogram& h) {
  const auto s = h.snapshot();
  ClientMetric m;
  m.label = std::move(labels);
  m.histogram.sample_count = s.count;
  m.histogram.sample_sum = s.sum_seconds;
  // prometheus-cpp writes le="+Inf" for the last bucket itself, with the sample count.
  for (size_t i = 0; i < s.bounds.size(); ++i)
    m.histogram.bucket.push_back(ClientMetric::Bucket{s.cumulative[i], s.bounds[i]});
  f.metric.push_back(std::move(m));
}

template <typename Enum>
void counter_by(MetricFamily& f, const char* label_name, const CounterByLabel<Enum>& counters) {
  for (size_t i = 0; i < CounterByLabel<Enum>::kSize; ++i) {
    const auto e = static_cast<Enum>(i);
    counter(f, {{label_name, std::string(label(e))}}, static_cast<double>(counters[e].value()));
  }
}

double d(uint64_t v) { return static_cast<double>(v); }

void kernel_families(Families& out, const GatewayMetrics& m, const Census& c) {
  // Every state of every kernelspec present, zeros included, so that a series does not vanish
  // when its last kernel leaves a state.
  std::map<std::string, std::array<uint64_t, static_cast<size_t>(KernelState::kCount)>> by_spec;
  for (const auto& k : c.kernels) by_spec[k.kernelspec][static_cast<size_t>(k.state)] += k.kernels;
  auto& kernels = out.add("cellgate_kernels", "Kernels by kernelspec and state (paused: frozen by the cgroup freezer)",
                          MetricType::Gauge);
  for (const auto& [spec, counts] : by_spec)
    for (size_t s = 0; s < counts.size(); ++s)
      gauge(kernels, {{"kernelspec", spec}, {"state", std::string(label(static_cast<KernelState>(s)))}}, d(counts[s]));
  gauge(out.add("cellgate_warm_pool_ready", "Warm-pool kernels started and waiting for a claim", MetricType::Gauge), {},
        d(c.warm_pool_ready));
  gauge(out.add("cellgate_kernel_memory_bytes", "Memory charged to all kernels' cgroups", MetricType::Gauge), {},
        d(c.kernel_memory_bytes));
  counter(out.add("cellgate_kernel_cpu_seconds_total", "CPU time of kernels (their cgroups), the stopped and restarted ones' included", MetricType::Counter),
          {}, c.kernel_cpu_seconds);

  auto& starts = out.add("cellgate_kernel_start_seconds",
                         "Kernel start latency, request to kernel_info_reply, by path (cold, fork_server, warm_pool)",
                         MetricType::Histogram);
  for (size_t p = 0; p < static_cast<size_t>(StartPath::kCount); ++p) {
    const auto path = static_cast<StartPath>(p);
    histogram(starts, {{"path", std::string(label(path))}}, m.start_seconds(path));
  }
  counter_by(out.add("cellgate_kernel_start_failures_total", "Kernel starts that failed, by path", MetricType::Counter),
             "path", m.start_failures());
  counter_by(out.add("cellgate_kernel_restarts_total", "Kernel restarts by reason", MetricType::Counter), "reason",
             m.restarts());
  counter(out.add("cellgate_kernel_deaths_total", "Kernel processes that died unasked", MetricType::Counter), {},
          d(m.deaths().value()));
  counter(out.add("cellgate_kernel_oom_kills_total", "Kernels killed by their cgroup's memory limit", MetricType::Counter),
          {}, d(m.oom_kills().value()));
  counter(out.add("cellgate_kernel_culls_total", "Idle kernels shut down by the culler", MetricType::Counter), {},
          d(m.culls().value()));
  counter(out.add("cellgate_kernel_pauses_total", "Kernels frozen after --pause-after", MetricType::Counter), {},
          d(m.pauses().value()));
  counter(out.add("cellgate_kernel_resumes_total", "Paused kernels thawed", MetricType::Counter), {},
          d(m.resumes().value()));
  counter_by(out.add("cellgate_jail_failures_total", "Jails that failed to start, by stage", MetricType::Counter),
             "stage", m.jail_failures());
}

void traffic_families(Families& out, const GatewayMetrics& m, const Census& c) {
  histogram(out.add("cellgate_execute_seconds", "execute_request to execute_reply", MetricType::Histogram), {},
            m.execute_seconds());
  counter(out.add("cellgate_iopub_messages_total", "iopub messages relayed from kernels", MetricType::Counter), {},
          d(m.iopub_messages().value()));
  counter(out.add("cellgate_iopub_bytes_total", "Bytes of iopub messages relayed from kernels", MetricType::Counter),
          {}, d(m.iopub_bytes().value()));
  gauge(out.add("cellgate_websockets_open", "Open kernel WebSockets", MetricType::Gauge), {},
        d(c.websockets));
  counter_by(out.add("cellgate_requests_refused_total",
                     "Requests refused, by reason (auth, rate_limit, quota, limit, forbidden, header_too_large, body_too_large, "
                     "message_too_big)", MetricType::Counter),
             "reason", m.refused());
  counter_by(out.add("cellgate_egress_refused_total",
                     "Kernel connections the egress proxy refused, by reason (policy, address, limit, request, upstream, "
                     "other)",
                     MetricType::Counter),
             "reason", m.egress_refused());
  gauge(out.add("cellgate_mcp_calls_running", "MCP tool calls running", MetricType::Gauge), {}, d(c.mcp_running));
  gauge(out.add("cellgate_mcp_calls_waiting", "MCP tool calls waiting for a slot", MetricType::Gauge), {},
        d(c.mcp_waiting));
}

void storage_families(Families& out, const GatewayMetrics& m, const Census& c) {
  histogram(out.add("cellgate_snapshot_seconds", "Workspace snapshot duration", MetricType::Histogram), {},
            m.snapshot_seconds());
  histogram(out.add("cellgate_restore_seconds", "Snapshot restore duration", MetricType::Histogram), {},
            m.restore_seconds());
  gauge(out.add("cellgate_store_bytes", "Bytes of the snapshot store's objects", MetricType::Gauge), {},
        d(c.store_bytes));
  gauge(out.add("cellgate_store_objects", "Objects in the snapshot store", MetricType::Gauge), {}, d(c.store_objects));
  gauge(out.add("cellgate_workspace_bytes", "Bytes of all live workspaces", MetricType::Gauge), {},
        d(c.workspace_bytes));
}

void user_families(Families& out, const Census& c) {
  auto& kernels = out.add("cellgate_user_kernels", "Kernels per user", MetricType::Gauge);
  auto& sockets = out.add("cellgate_user_websockets", "Open WebSockets per user", MetricType::Gauge);
  auto& memory = out.add("cellgate_user_memory_bytes", "Memory of a user's kernels", MetricType::Gauge);
  auto& cpu = out.add("cellgate_user_cpu_seconds_total", "CPU time of a user's kernels, the stopped ones' included", MetricType::Counter);
  auto& ws = out.add("cellgate_user_workspace_bytes", "Bytes of a user's workspaces", MetricType::Gauge);
  for (const auto& u : c.users) {
    const Labels l{{"user", u.user}};
    gauge(kernels, l, d(u.kernels));
    gauge(sockets, l, d(u.websockets));
    gauge(memory, l, d(u.memory_bytes));
    counter(cpu, l, u.cpu_seconds);
    gauge(ws, l, d(u.workspace_bytes));
  }
}

void process_families(Families& out) {
  auto p = read_process_figures();
  if (!p) return;
  counter(out.add("process_cpu_seconds_total", "User and system CPU time of the gateway", MetricType::Counter), {},
          p->cpu_seconds);
  gauge(out.add("process_resident_memory_bytes", "Resident memory of the gateway", MetricType::Gauge), {},
        d(p->resident_bytes));
  gauge(out.add("process_virtual_memory_bytes", "Virtual memory of the gateway", MetricType::Gauge), {},
        d(p->virtual_bytes));
  gauge(out.add("process_open_fds", "Open file descriptors of the gateway", MetricType::Gauge), {}, d(p->open_fds));
  gauge(out.add("process_max_fds", "The gateway's open files limit", MetricType::Gauge), {}, d(p->max_fds));
  gauge(out.add("process_start_time_seconds", "When the gateway started, since the Unix epoch", MetricType::Gauge),
        {}, p->start_time_seconds);
}

}  // namespace

std::string render(const GatewayMetrics& metrics, const Census& census, const ExpositionOptions& options) {
  Families out;
  gauge(out.add("cellgate_build_info", "The gateway's version (always 1)", MetricType::Gauge),
        {{"version", options.version}}, 1);
  kernel_families(out, metrics, census);
  traffic_families(out, metrics, census);
  storage_families(out, metrics, census);
  if (options.per_user) user_families(out, census);
  process_families(out);
  std::ostringstream text;
  prometheus::TextSerializer().Serialize(text, out.take());
  return text.str();
}

}  // namespace cellgate::metrics
