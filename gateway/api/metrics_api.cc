// SPDX-License-Identifier: BSD-3-Clause
// metrics_api: GET /metrics, the gateway's figures in the Prometheus text format (metrics/).
#include "gateway/api/metrics_api.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "gateway/api/mcp_api.h"
#include "gateway/gateway.h"
#include "gateway/kernel_manager.h"
#include "gateway/offload.h"
#include "metrics/exposition.h"
#include "state/workspace_records.h"

namespace cellgate::api {
namespace {

metrics::KernelState state_of(const launcher::Kernel& k) {
  return metrics::kernel_state_from(launcher::to_string(k.state()), k.paused());
}

// The objects' bytes and count under the store (files only; what a failed walk reached so far).
std::pair<uint64_t, uint64_t> walk_store(const std::string& dir) {
  namespace fs = std::filesystem;
  uint64_t bytes = 0, objects = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    if (!it->is_regular_file(size_ec)) continue;
    const auto size = it->file_size(size_ec);
    if (size_ec) continue;
    bytes += size;
    ++objects;
  }
  return {bytes, objects};
}

}  // namespace

boost::asio::awaitable<void> MetricsApi::measure_storage() {
  constexpr auto kEvery = std::chrono::seconds(60);
  constexpr auto kAfterChange = std::chrono::seconds(2);
  const auto now = std::chrono::steady_clock::now();
  const auto& m = gw_.metrics();
  const uint64_t changes = m.snapshot_seconds().snapshot().count + m.restore_seconds().snapshot().count;
  const auto age = measured_at_ ? now - *measured_at_ : std::chrono::steady_clock::duration::max();
  if (measuring_ || age < (changes != measured_changes_ ? kAfterChange : kEvery)) co_return;
  measuring_ = true;
  measured_changes_ = changes;
  Storage s;
  const std::string store = gw_.workspaces().store().dir();
  // By reference: GCC 12 may destroy a temporary in a co_await operand twice (see health_api.cc).
  auto [bytes, objects] = co_await gw_.offload().run([&store] { return walk_store(store); });
  s.store_bytes = bytes;
  s.store_objects = objects;
  // The database is the io thread's: each workspace's newest snapshot, from the index.
  if (auto all = state::list_all_workspaces(gw_.db())) {
    for (const auto& w : all.value()) {
      auto snaps = state::list_snapshots(gw_.db(), w.owner, w.name);
      if (!snaps || snaps->empty()) continue;
      const auto b = static_cast<uint64_t>(std::max<int64_t>(0, snaps->back().bytes));
      s.workspace_bytes += b;
      s.workspace_bytes_by_user[w.owner] += b;
    }
  }
  storage_ = std::move(s);
  measured_at_ = std::chrono::steady_clock::now();
  measuring_ = false;
}

boost::asio::awaitable<http::Reply> MetricsApi::metrics(Call& call) {
  co_await measure_storage();
  const auto& config = gw_.config();
  metrics::Census census;
  std::map<std::pair<std::string, metrics::KernelState>, uint64_t> by_spec;
  std::map<std::string, metrics::UserFigures> users;
  for (const auto& [name, spec] : gw_.kernels().kernelspecs()) by_spec[{name, metrics::KernelState::kIdle}] += 0;
  auto& ledger = gw_.metrics().cpu();
  std::set<metrics::CpuLedger::Process> running;
  for (const auto& [id, hub] : gw_.kernels().kernels()) {
    auto& k = hub->kernel();
    ++by_spec[{k.name(), state_of(k)}];
    // The cgroup's memory.current (v2) or memory.usage_in_bytes (v1): one small read per kernel.
    const bool live = k.state() != launcher::KernelState::kDead && k.process().pid > 0;
    const uint64_t memory = live ? k.spawner().memory_usage(k.process()) : 0;
    if (live) {
      const metrics::CpuLedger::Process process{id, k.process().pid};
      ledger.observe(process, hub->owner, k.spawner().cpu_seconds(k.process()));
      running.insert(process);
    }
    census.kernel_memory_bytes += memory;
    census.websockets += static_cast<uint64_t>(hub->connections());
    if (config.metrics_per_user) {
      auto& u = users[hub->owner];
      u.user = hub->owner;
      ++u.kernels;
      u.websockets += static_cast<uint64_t>(hub->connections());
      u.memory_bytes += memory;
    }
  }
  // Processes gone since the last scrape (stopped, restarted, died) keep their last reading.
  ledger.retire_all_but(running);
  census.kernel_cpu_seconds = ledger.total();
  if (config.metrics_per_user) {
    for (const auto& [owner, seconds] : ledger.by_owner()) {
      auto& u = users[owner];
      u.user = owner;
      u.cpu_seconds = seconds;
    }
  }
  for (const auto& [key, n] : by_spec) census.kernels.push_back({key.first, key.second, n});
  if (auto pool = gw_.kernels().pool_status(); pool.is_object()) {
    for (const auto& [spec, s] : pool.items()) census.warm_pool_ready += s.value("ready", 0u);
  }
  const auto mcp = mcp_.status();
  census.mcp_running = mcp.value("running", 0u);
  census.mcp_waiting = mcp.value("waiting", 0u);
  census.store_bytes = storage_.store_bytes;
  census.store_objects = storage_.store_objects;
  census.workspace_bytes = storage_.workspace_bytes;
  if (config.metrics_per_user) {
    for (const auto& [owner, b] : storage_.workspace_bytes_by_user) {
      auto& u = users[owner];
      u.user = owner;
      u.workspace_bytes = b;
    }
  }
  for (auto& [name, u] : users) census.users.push_back(std::move(u));

  http::Response res{http::status::ok, call.req.version()};
  res.set(http::field::content_type, std::string(metrics::kContentType));
  res.set(http::field::cache_control, "no-store");
  res.keep_alive(call.req.keep_alive());
  res.body() = metrics::render(gw_.metrics(), census, {config.metrics_per_user, "0.1.0"});
  res.prepare_payload();
  co_return reply(std::move(res));
}

}  // namespace cellgate::api
