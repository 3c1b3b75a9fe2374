// SPDX-License-Identifier: BSD-3-Clause
// kernel_manager_adoption: the manager across gateway restarts: the kernels a gateway left running
// re-adopted at start, those the cluster declared dead ended, and what stop() leaves running.
#include <fstream>

#include <fmt/core.h>

#include "common/log.h"
#include "gateway/egress_proxy.h"
#include "gateway/fork_server.h"
#include "gateway/idle_watch.h"
#include "gateway/kernel_manager.h"
#include "gateway/kernel_plan.h"
#include "gateway/start_gate.h"
#include "gateway/warm_pool.h"
#include "journal/journal.h"
#include "kernel-launcher/spawn_util.h"
#include "state/kernel_records.h"
#include "state/placement.h"
#include "workspace/workspace_manager.h"

namespace cellgate::gateway {

using boost::asio::awaitable;
using nlohmann::json;

namespace {

// True when pid is still the process we started for kernel_id (pids are reused).
bool is_our_process(pid_t pid, const std::string& kernel_id, const std::string& private_dir) {
  std::ifstream in(fmt::format("/proc/{}/cmdline", pid), std::ios::binary);
  std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return !cmd.empty() && (cmd.find(kernel_id) != std::string::npos || cmd.find(private_dir) != std::string::npos);
}

// Why the jail helper says a kernel died ("" when it says nothing).
std::string status_reason(const std::string& status_file) {
  std::ifstream in(status_file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto j = json::parse(text, nullptr, false);
  if (j.is_object() && j.contains("reason") && j["reason"].is_string() && !j["reason"].get<std::string>().empty())
    return j["reason"];
  return "";
}

}  // namespace

awaitable<void> KernelManager::adopt() {
  auto records = state::list_kernels(services_.db);
  if (!records) {
    common::log_error("msg=\"cannot list kernels to re-adopt\" error=\"{}\"", records.error().message);
    co_return;
  }
  auto specs = kernelspecs();
  for (const auto& rec : records.value()) {
    // In a cluster, each node re-adopts only its own (one machine's rows all name "").
    if (rec.node != config_.node_id) continue;
    if (rec.state == "placing") {  // placed here by a node, never started: the start failed with this gateway
      (void)state::unplace_kernel(services_.db, rec.id);
      continue;
    }
    auto user = services_.users.get_user(rec.owner);
    auto plan = adoption_plan(config_, read_budget_, rec, specs);
    auto network = json::parse(rec.network.empty() ? std::string("{}") : rec.network, nullptr, false);
    // A row with a policy, even one changed to none since, is a jail with a proxy endpoint.
    const bool endpoint = !rec.network.empty() && network.is_object() && egress_;
    if (endpoint) route_through_egress(plan);  // its restarts go through the proxy too
    auto hub = make_hub(std::move(plan), rec.owner, rec.workspace, user ? &user.value() : nullptr);
    if (endpoint) {
      hub->network = network;
      hub->egress_endpoint = true;
    }
    if (user) hub->workspace_config = workspace_config_for(services_.workspaces.config(), user.value());
    auto& kernel = hub->kernel();
    pid_t pid = static_cast<pid_t>(rec.helper_pid);
    launcher::ProcessHandle proc;
    proc.pid = pid;
    proc.is_child = false;
    proc.status_file = rec.jail_status_file;
    if (pid > 0 && is_our_process(pid, rec.id, kernel.options().private_dir)) proc.pidfd = launcher::open_pidfd(pid);
    // Kernels nobody owns (the pool's, notebook-http's) are shut down below; theirs goes on too.
    if (services_.journal && rec.owner != kPoolOwner)
      hub->set_journal(services_.journal->resume(rec.id, rec.owner, rec.kernelspec, rec.workspace,
                                                 services_.snapshots != nullptr, static_cast<bool>(proc.pidfd), ""));
    if (!proc.pidfd) {
      std::string why = status_reason(rec.jail_status_file);
      kernel.mark_dead("the kernel died while the gateway was down" + (why.empty() ? "" : ": " + why), proc);
      common::log_warn("kernel={} msg=\"kernel found dead at start\" reason=\"{}\"", rec.id, kernel.reason());
      continue;
    }
    auto st = co_await kernel.adopt(std::move(proc));
    if (!st) {
      kernel.mark_dead("could not re-adopt the kernel: " + st.error().message, launcher::ProcessHandle{});
      common::log_warn("kernel={} msg=\"re-adoption failed\" error=\"{}\"", rec.id, st.error().message);
      continue;
    }
    common::log_info("kernel={} owner={} msg=\"kernel re-adopted\"", rec.id, rec.owner);
  }
}

awaitable<bool> KernelManager::end_dead_kernels(std::string why) {
  auto records = state::list_kernels(services_.db);
  if (!records) {
    common::log_error("msg=\"cannot list kernels to end the dead ones\" error=\"{}\"", records.error().message);
    co_return false;
  }
  for (const auto& rec : records.value()) {
    if (rec.node != config_.node_id || rec.state != "dead") continue;
    auto it = kernels_.find(rec.id);
    if (it == kernels_.end()) continue;
    it->second->notify_clients(why + (rec.reason.empty() || rec.reason == why ? "" : ": " + rec.reason));
    common::log_warn("kernel={} reason=\"{}\" msg=\"ending a kernel whose row is dead\"", rec.id, rec.reason);
    // Killed while still frozen (fenced): its workspace may be restored elsewhere already, so it gets no
    // polite shutdown, which would thaw it and let it run for the shutdown grace. A frozen task dies of
    // a pending SIGKILL as it thaws (cgroup v1), or at once (cgroup v2), before running its own code.
    auto& k = it->second->kernel();
    if (k.process().pid > 0) k.spawner().signal(k.process(), launcher::KernelSignal::kKill);
    co_await remove(rec.id, "@cluster");
  }
  co_return true;
}

awaitable<void> KernelManager::start_services() {
  co_await adopt();
  // A node declared lost while its gateway was down re-adopts nothing the others marked dead.
  if (config_.clustered()) co_await end_dead_kernels("node lost");
  // This gateway's proxy is new: adopted kernels' policies and endpoints go to it before we serve.
  if (egress_) co_await resync_egress_now(resync_, ++*resync_);
  // A crashed gateway leaves its warm pool's and notebook-http's kernels behind; they are nobody's.
  std::vector<std::pair<std::string, std::string>> stale;
  for (const auto& [id, hub] : kernels_)
    if (hub->owner == kPoolOwner || hub->owner == kNotebookHttpOwner) stale.emplace_back(id, hub->owner);
  for (const auto& [id, owner] : stale) co_await remove(id, owner);
  // Only now: a new pool kernel recorded before that sweep would have been taken for a stale one.
  if (pool_) pool_->start();
}

awaitable<void> KernelManager::stop() {
  ++*resync_;  // a resync in progress ends at its next step
  gate_->close();
  idle_->stop();
  if (fork_server_) fork_server_->stop();  // kernels do not depend on it; stopped first, it is not restarted
  if (pool_) co_await pool_->stop();
  if (config_.shutdown_kernels_on_exit) {
    std::vector<std::string> ids;
    for (const auto& [id, hub] : kernels_) ids.push_back(id);
    for (const auto& id : ids) co_await remove(id, "gateway");
  } else {
    // Kernels keep running in their jails; the next start re-adopts them from the database. Their ZMQ
    // sockets are closed now: the ZMQ context cannot terminate while any is open.
    for (const auto& [id, hub] : kernels_) {
      hub->close_all("gateway restarting; reconnect with the same session_id");
      hub->kernel().detach();
    }
  }
  if (egress_) egress_->stop();  // kernels left running wait in their endpoints' backlogs for the next one
}

}  // namespace cellgate::gateway
