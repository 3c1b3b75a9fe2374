// SPDX-License-Identifier: BSD-3-Clause
// kernel_lifecycle: starting, deleting, re-adopting and culling kernels.
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <fmt/core.h>

#include "common/log.h"
#include "common/random.h"
#include "gateway/gateway.h"
#include "gateway/snapshot_index.h"
#include "kernel-launcher/kernel_env.h"
#include "kernel-launcher/spawn_util.h"
#include "state/kernel_records.h"
#include "workspace/layout.h"

namespace cellgate::gateway {

namespace asio = boost::asio;
using asio::awaitable;
using common::Errc;
using common::make_error;
using nlohmann::json;

namespace {

// True when pid is still the process we started for kernel_id (pids are reused).
bool is_our_process(pid_t pid, const std::string& kernel_id, const std::string& private_dir) {
  std::ifstream in(fmt::format("/proc/{}/cmdline", pid), std::ios::binary);
  std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return !cmd.empty() && (cmd.find(kernel_id) != std::string::npos || cmd.find(private_dir) != std::string::npos);
}

std::string status_reason(const std::string& status_file) {
  std::ifstream in(status_file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto j = json::parse(text, nullptr, false);
  if (j.is_object() && j.contains("reason") && j["reason"].is_string() && !j["reason"].get<std::string>().empty())
    return j["reason"];
  return "";
}

}  // namespace

std::shared_ptr<KernelHub> Gateway::make_hub(launcher::KernelOptions options, const std::string& owner,
                                             const std::string& workspace, const state::User* user, bool listed) {
  options.heartbeat_timeout = std::chrono::seconds(config_.heartbeat_timeout_s);
  options.heartbeat_interval = std::min<std::chrono::milliseconds>(std::chrono::seconds(3), options.heartbeat_timeout / 3);
  options.freezer = config_.freezer;
  // A kernelspec may pause sooner, later or never: metadata.cellgate.pause_after (seconds, 0 = never).
  int pause_after = config_.pause_after_s;
  if (auto md = options.spec.metadata.find("cellgate"); md != options.spec.metadata.end() && md->is_object()) {
    if (auto p = md->find("pause_after"); p != md->end() && p->is_number_unsigned())
      pause_after = static_cast<int>(std::min<uint64_t>(p->get<uint64_t>(), 1u << 30));
  }
  auto kernel = std::make_shared<launcher::Kernel>(io_, *spawner_, std::move(options));
  auto hub = std::make_shared<KernelHub>(kernel, config_.replay_bytes);
  hub->owner = owner;
  hub->workspace = workspace;
  hub->pause_after_s = pause_after;
  kernel->set_observer(hub.get());
  int64_t limit = config_.execute_limit_s;
  if (user && user->limits.exec_timeout_s) limit = *user->limits.exec_timeout_s;
  hub->set_execute_limit(std::chrono::seconds(limit));
  std::weak_ptr<KernelHub> weak = hub;
  hub->set_execute_reply_hook([this, weak](protocol::Message reply, std::function<void(protocol::Message)> deliver) {
    if (auto h = weak.lock()) snapshot_after_execute(h, std::move(reply), std::move(deliver));
  });
  if (listed) kernels_[kernel->id()] = hub;
  return hub;
}

void Gateway::apply_kernelspec_policy(launcher::KernelOptions& ko) const {
  ko.transport = config_.transport;
  ko.policy_file = config_.jail_policy;
  ko.limits = config_.limits;
  // A kernelspec may choose its own jail policy and limits: metadata.cellgate {policy, memory, pids, cpus}.
  if (auto md = ko.spec.metadata.find("cellgate"); md != ko.spec.metadata.end() && md->is_object()) {
    if (auto p = md->find("policy"); p != md->end() && p->is_string()) ko.policy_file = p->get<std::string>();
    if (auto m = md->find("memory"); m != md->end() && m->is_number_unsigned()) ko.limits.memory_bytes = m->get<uint64_t>();
    if (auto p = md->find("pids"); p != md->end() && p->is_number_unsigned()) ko.limits.pids = p->get<uint32_t>();
    if (auto c = md->find("cpus"); c != md->end() && c->is_number() && c->get<double>() > 0) ko.limits.cpus = c->get<double>();
  }
  ko.start_timeout = std::chrono::seconds(config_.kernel_start_timeout_s);
  ko.max_message_bytes = config_.max_kernel_message_bytes;
  ko.read_budget = read_budget_;
  ko.shutdown_grace = std::chrono::milliseconds(config_.shutdown_grace_ms);
}

awaitable<common::Result<std::shared_ptr<KernelHub>>> Gateway::start_kernel(const Caller& caller, StartOptions options) {
  std::string name = options.name.empty() ? config_.default_kernel : options.name;
  if (!launcher::valid_kernelspec_name(name)) co_return make_error(Errc::kBadRequest, "invalid kernel name");
  auto specs = kernelspecs();
  auto spec = specs.find(name);
  if (spec == specs.end()) co_return make_error(Errc::kNotFound, "No such kernel named " + name);
  const state::User& user = caller.user;
  int owned = starting_[user.name];
  for (const auto& [id, hub] : kernels_) owned += hub->owner == user.name ? 1 : 0;
  int64_t max_user = user.limits.max_kernels ? *user.limits.max_kernels : config_.max_kernels_per_user;
  if (max_user > 0 && owned >= max_user)
    co_return make_error(Errc::kForbidden, fmt::format("quota exceeded: max_kernels ({}) for user {}", max_user, user.name));
  int total = static_cast<int>(kernels_.size());
  for (const auto& [u, n] : starting_) total += n;
  if (config_.max_kernels > 0 && total >= config_.max_kernels)
    co_return make_error(Errc::kForbidden, fmt::format("Resource Limit: max_kernels ({}) reached", config_.max_kernels));
  auto client_env = launcher::filter_client_env(options.env, config_.allow_env);
  if (!client_env) co_return client_env.error();
  std::shared_ptr<const Seed> seed = options.seed;
  if (!seed) {
    auto found = seed_for(spec->second, global_seed_);
    if (!found) co_return found.error();
    seed = found.value();
  }

  launcher::KernelOptions ko;
  ko.kernel_id = common::random_uuid();
  std::string ws_name = options.workspace;
  if (ws_name.empty() && client_env->count("KERNEL_WORKSPACE")) ws_name = client_env->at("KERNEL_WORKSPACE");
  if (options.ephemeral) ws_name = "tmp-" + ko.kernel_id.substr(0, 8);
  if (ws_name.empty()) ws_name = "default";
  if (auto st = workspace::validate_name(ws_name); !st) co_return make_error(Errc::kBadRequest, "workspace: " + st.error().message);
  workspace::WorkspaceRef ref{user.name, ws_name};
  auto ws = co_await offload([&] { return workspaces_->ensure(ref); });
  if (!ws) co_return ws.error();

  ko.spec = spec->second;
  ko.runtime_dir = config_.runtime_dir + "/k/" + ko.kernel_id;
  ko.private_dir = config_.runtime_dir + "/s/" + ko.kernel_id;
  ko.workspace_dir = ws->tree_path();
  // Identity comes from the token, never from what the client says (KERNEL_USERNAME).
  std::map<std::string, std::string> forced = {
      {"KERNEL_ID", ko.kernel_id}, {"KERNEL_USERNAME", user.name}, {"KERNEL_WORKSPACE", ws_name}};
  // IPython's history database must not live in the workspace: snapshots would churn on it, and a
  // restore would swap it under the running kernel.
  if (config_.spawner == "plain") {
    forced["HOME"] = ko.workspace_dir;
    forced["IPYTHONDIR"] = ko.private_dir + "/ipython";
  } else {
    forced["IPYTHONDIR"] = "/tmp/.ipython";
  }
  ko.env = launcher::build_kernel_env(ko.spec, client_env.value(), forced);
  apply_kernelspec_policy(ko);
  if (user.limits.memory_bytes) ko.limits.memory_bytes = static_cast<uint64_t>(*user.limits.memory_bytes);
  if (user.limits.cpus) ko.limits.cpus = *user.limits.cpus;
  if (user.limits.pids) ko.limits.pids = static_cast<uint32_t>(*user.limits.pids);

  if (kernel_pool_) {
    // A warm kernel when one fits; anything else (none ready, env it cannot take) starts cold.
    auto claimed = co_await claim_pooled(caller, ko, ws_name, options.ephemeral);
    if (claimed) co_return claimed;
  }
  auto hub = make_hub(std::move(ko), user.name, ws_name, &user);
  hub->ephemeral = options.ephemeral;
  hub->workspace_config = workspace_config(user);
  if (!options.snapshots) hub->set_execute_reply_hook(nullptr);
  auto& kernel = hub->kernel();
  const std::string id = kernel.id();
  if (seed && !seed->cells.empty()) {
    // On every launch of this kernel (restarts too), before it is declared ready.
    std::weak_ptr<KernelHub> weak = hub;
    auto timeout = std::chrono::seconds(config_.seed_timeout_s);
    auto failure = options.seed_failure;
    kernel.set_ready_hook([weak, seed, timeout, failure]() { return run_seed(weak, seed, timeout, failure); });
  }
  state::KernelRecord rec{id, user.name, name, ws_name, kernel.options().runtime_dir, 0, "",
                          common::iso8601_now(), "starting"};
  if (auto st = state::insert_kernel(*db_, rec); !st)
    common::log_error("kernel={} msg=\"cannot record kernel\" error=\"{}\"", id, st.error().message);
  ++starting_[user.name];
  auto st = co_await kernel.start();
  --starting_[user.name];
  if (!st) {
    kernels_.erase(id);
    co_await kernel.shutdown();  // the process is gone already; this removes its runtime dirs
    unwatch_if_unused(*hub);
    (void)state::delete_kernel(*db_, id);
    if (options.ephemeral) {
      co_await offload([&] { return workspaces_->remove(ref); });
      (void)unindex_workspace(*db_, ref);
    }
    audit(caller, "start", "kernel", id, {{"kernelspec", name}, {"error", st.error().message}}, false);
    common::log_error("kernel={} msg=\"kernel failed to start\" error=\"{}\"", id, st.error().message);
    co_return make_error(st.error().code == Errc::kTimeout ? Errc::kTimeout : Errc::kInternal,
                         "kernel failed to start: " + st.error().message);
  }
  (void)state::set_kernel_helper(*db_, id, kernel.process().pid, kernel.process().status_file);
  (void)state::set_kernel_state(*db_, id, "running");
  audit(caller, "start", "kernel", id, {{"kernelspec", name}, {"workspace", ws_name}});
  common::log_info("kernel={} name={} owner={} msg=\"kernel started\"", id, name, user.name);
  co_return hub;
}

void Gateway::unwatch_if_unused(const KernelHub& gone) {
  // inotify watches come from a host-wide budget (fs.inotify.max_user_watches): a workspace no
  // kernel uses any more is not watched.
  for (const auto& [id, hub] : kernels_)
    if (hub->owner == gone.owner && hub->workspace == gone.workspace) return;
  if (auto ws = workspaces_->open(workspace::WorkspaceRef{gone.owner, gone.workspace}))
    change_watch_.forget(ws->tree_path());
}

awaitable<void> Gateway::delete_kernel(std::string id, std::string who) {
  auto it = kernels_.find(id);
  if (it == kernels_.end()) co_return;
  auto hub = it->second;
  kernels_.erase(it);
  (void)state::delete_kernel(*db_, id);  // its sessions go with it (foreign key)
  hub->close_all("kernel deleted");
  co_await hub->kernel().shutdown();
  unwatch_if_unused(*hub);
  if (hub->ephemeral) {
    workspace::WorkspaceRef ref{hub->owner, hub->workspace};
    co_await offload([&] { return workspaces_->remove(ref); });
    (void)unindex_workspace(*db_, ref);
  }
  audit(Caller{state::User{who, false, {}, "", false}, {}}, "stop", "kernel", id, {{"owner", hub->owner}});
  common::log_info("kernel={} by={} msg=\"kernel deleted\"", id, who);
}

awaitable<void> Gateway::adopt_kernels() {
  auto records = state::list_kernels(*db_);
  if (!records) {
    common::log_error("msg=\"cannot list kernels to re-adopt\" error=\"{}\"", records.error().message);
    co_return;
  }
  auto specs = kernelspecs();
  for (const auto& rec : records.value()) {
    launcher::KernelOptions ko;
    ko.kernel_id = rec.id;
    if (auto s = specs.find(rec.kernelspec); s != specs.end()) ko.spec = s->second;
    ko.spec.name = rec.kernelspec;
    ko.runtime_dir = rec.runtime_dir;
    ko.private_dir = config_.runtime_dir + "/s/" + rec.id;
    ko.workspace_dir = workspace::workspace_dir(config_.data_dir, rec.owner, rec.workspace) + "/tree";
    // What the kernel was started with is not stored; the tools' processes get the same defaults.
    ko.env = launcher::build_kernel_env(
        ko.spec, {}, {{"KERNEL_ID", rec.id}, {"KERNEL_USERNAME", rec.owner}, {"KERNEL_WORKSPACE", rec.workspace}});
    ko.shutdown_grace = std::chrono::milliseconds(config_.shutdown_grace_ms);
    ko.start_timeout = std::chrono::seconds(10);
    ko.max_message_bytes = config_.max_kernel_message_bytes;
    ko.read_budget = read_budget_;
    auto user = users_->get_user(rec.owner);
    auto hub = make_hub(std::move(ko), rec.owner, rec.workspace, user ? &user.value() : nullptr);
    if (user) hub->workspace_config = workspace_config(user.value());
    auto& kernel = hub->kernel();
    pid_t pid = static_cast<pid_t>(rec.helper_pid);
    launcher::ProcessHandle proc;
    proc.pid = pid;
    proc.is_child = false;
    proc.status_file = rec.jail_status_file;
    if (pid > 0 && is_our_process(pid, rec.id, kernel.options().private_dir)) proc.pidfd = launcher::open_pidfd(pid);
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

awaitable<common::Status> Gateway::start_services() {
  co_await adopt_kernels();
  // A crashed gateway leaves its warm pool's and notebook-http's kernels behind; they are nobody's.
  std::vector<std::pair<std::string, std::string>> stale;
  for (const auto& [id, hub] : kernels_)
    if (hub->owner == kPoolOwner || hub->owner == NotebookHttp::kOwner) stale.emplace_back(id, hub->owner);
  for (const auto& [id, owner] : stale) co_await delete_kernel(id, owner);
  // Only now: a new pool kernel recorded before that sweep would have been taken for a stale one.
  if (kernel_pool_) kernel_pool_->start();
  if (!notebook_http_) co_return common::ok();
  co_return co_await notebook_http_->start(*this);
}

awaitable<void> Gateway::stop() {
  if (cull_timer_) cull_timer_->cancel();
  stop_zygote();  // kernels do not depend on it; stopping it first keeps it from being restarted
  if (pause_timer_) pause_timer_->cancel();
  if (kernel_pool_) co_await kernel_pool_->stop();
  if (notebook_http_) {
    co_await notebook_http_->stop();
    // A replacement that was starting while the pool stopped is nobody's either.
    std::vector<std::string> pooled;
    for (const auto& [id, hub] : kernels_)
      if (hub->owner == NotebookHttp::kOwner) pooled.push_back(id);
    for (const auto& id : pooled) co_await delete_kernel(id, "notebook-http");
  }
  if (config_.shutdown_kernels_on_exit) {
    std::vector<std::string> ids;
    for (const auto& [id, hub] : kernels_) ids.push_back(id);
    for (const auto& id : ids) co_await delete_kernel(id, "gateway");
  } else {
    // Kernels keep running in their jails; the next start re-adopts them from the database. Their ZMQ
    // sockets are closed now: the ZMQ context cannot terminate while any is open.
    for (const auto& [id, hub] : kernels_) {
      hub->close_all("gateway restarting; reconnect with the same session_id");
      hub->kernel().detach();
    }
  }
}

void Gateway::schedule_cull() {
  if (config_.cull_idle_timeout_s <= 0) return;
  if (!cull_timer_) cull_timer_ = std::make_unique<asio::steady_timer>(io_);
  cull_timer_->expires_after(std::chrono::seconds(config_.cull_interval_s));
  cull_timer_->async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    auto now = std::chrono::system_clock::now();
    std::vector<std::string> victims;
    for (const auto& [id, hub] : kernels_) {
      auto& k = hub->kernel();
      // A kernel still starting has had no chance to be used (a slow start must not be culled).
      if (k.state() == launcher::KernelState::kStarting || k.state() == launcher::KernelState::kRestarting) continue;
      if (k.state() == launcher::KernelState::kBusy && !config_.cull_busy) continue;
      if (hub->connections() > 0 && !config_.cull_connected) continue;
      if (now - k.last_activity() > std::chrono::seconds(config_.cull_idle_timeout_s)) victims.push_back(id);
    }
    for (const auto& id : victims) {
      auto hub = kernels_[id];
      std::string why = fmt::format("kernel culled after {} s idle (its workspace is kept)", config_.cull_idle_timeout_s);
      hub->notify_clients(why);
      common::log_info("kernel={} msg=\"culling idle kernel\"", id);
      asio::co_spawn(io_, delete_kernel(id, "culler"), asio::detached);
    }
    schedule_cull();
  });
}

}  // namespace cellgate::gateway
