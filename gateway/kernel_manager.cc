// SPDX-License-Identifier: BSD-3-Clause
// kernel_manager: the one owner of every kernel's life: start, restart, delete, the warm pool's claims.
#include "gateway/kernel_manager.h"

#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/core.h>

#include "common/log.h"
#include "common/random.h"
#include "egress/policy.h"
#include "gateway/audit.h"
#include "gateway/egress_proxy.h"
#include "gateway/execute_snapshot.h"
#include "gateway/fork_server.h"
#include "gateway/idle_watch.h"
#include "gateway/kernel_memory_merge.h"
#include "gateway/kernel_network.h"
#include "gateway/kernel_plan.h"
#include "gateway/offload.h"
#include "gateway/snapshot_index.h"
#include "gateway/start_gate.h"
#include "gateway/warm_pool.h"
#include "isolation/cgroup_paths.h"
#include "journal/journal.h"
#include "kernel-launcher/kernel_env.h"
#include "kernel-launcher/spawn_util.h"
#include "state/database.h"
#include "state/kernel_records.h"
#include "state/placement.h"
#include "workspace/layout.h"
#include "workspace/workspace_manager.h"

namespace cellgate::gateway {

namespace asio = boost::asio;
using asio::awaitable;
using common::Errc;
using common::make_error;
using nlohmann::json;

namespace {

// A start counted toward its user's quotas from their check until its kernel is listed (or it ends).
class Starting {
 public:
  Starting(std::map<std::string, int>& starting, std::string user) : starting_(&starting), user_(std::move(user)) {
    ++(*starting_)[user_];
  }
  ~Starting() { done(); }
  Starting(const Starting&) = delete;
  Starting& operator=(const Starting&) = delete;
  void done() {
    if (!starting_) return;
    if (auto it = starting_->find(user_); it != starting_->end() && --it->second <= 0) starting_->erase(it);
    starting_ = nullptr;
  }

 private:
  std::map<std::string, int>* starting_;
  std::string user_;
};

// A relaunch (a restart, or the automatic restart after a death) takes its turn as a start does,
// charged to the kernel's owner at that moment: restarting in a loop, or kernels that keep dying,
// get no more spawns at once than starts would. A pool kernel (nobody's yet) is bounded by the pool.
awaitable<common::Result<launcher::Kernel::LaunchPermit>> relaunch_turn(std::weak_ptr<KernelHub> weak_hub,
                                                                        std::weak_ptr<StartGate> weak_gate) {
  std::string owner;
  if (auto hub = weak_hub.lock()) owner = hub->owner;
  auto gate = weak_gate.lock();
  if (owner.empty() || !gate) co_return launcher::Kernel::LaunchPermit{};
  auto slot = co_await gate->enter(owner);
  if (!slot) co_return slot.error();
  co_return launcher::Kernel::LaunchPermit(std::make_shared<StartGate::Slot>(std::move(slot.value())));
}

StartLimits start_limits(const Config& c) {
  return StartLimits{c.max_starting, c.max_starting_per_user, c.start_queue, c.start_queue_per_user,
                     std::chrono::seconds(c.kernel_start_timeout_s)};
}

}  // namespace

bool visible_to(const KernelHub& hub, const state::User& user) { return user.admin || hub.owner == user.name; }

// The cgroup level a kernel's jail goes under: one per user, so that each user's kernels together
// get one CPU share against another user's. Pooled kernels (nobody's yet) share "pool"; a claimed
// one stays there until its next launch (a cgroup cannot move to another parent). A pooled kernel is
// made with no owner and recorded as kPoolOwner: both are the pool's.
std::string cgroup_owner_for(const std::string& owner) {
  if (owner.empty() || owner == KernelManager::kPoolOwner) return "pool";
  return isolation::user_cgroup_owner(owner);
}

KernelManager::KernelManager(asio::io_context& io, const Config& config, Services services,
                             std::unique_ptr<launcher::Spawner> spawner)
    : io_(io), config_(config), services_(services),
      kernelspec_path_(launcher::kernelspec_search_path(config.kernelspec_dirs)),
      read_budget_(std::make_shared<launcher::ReadBudget>(config.kernel_read_budget)),
      gate_(std::make_shared<StartGate>(io, start_limits(config))) {
  // A kernelspec's network policy is configuration: one that does not parse stops the gateway, before
  // anything is started.
  for (const auto& [name, spec] : kernelspecs())
    if (auto network = kernelspec_network(spec, config_.egress_ip_rules); !network) throw ConfigError(network.error().message);
  if (spawner) {
    spawner_ = std::move(spawner);
  } else if (config_.spawner == "plain") {
    spawner_ = launcher::make_plain_spawner();
  } else {
    if (::access(config_.jail_helper.c_str(), X_OK) != 0)
      throw ConfigError("jail helper not found at " + config_.jail_helper + " (use --jail-helper or --spawner plain)");
    std::vector<std::string> jail_extra = {"--kernel-log-bytes", std::to_string(config_.kernel_log_bytes)};
    if (config_.kernels_cpu_weight > 0)
      jail_extra.insert(jail_extra.end(), {"--kernels-cpu-weight", std::to_string(config_.kernels_cpu_weight)});
    if (config_.kernel_memory_merge) {
      common::log_info("{}", start_kernel_memory_merge(kKsmDir, config_.kernel_memory_merge_rate));
      jail_extra.insert(jail_extra.end(), {"--memory-merge", "on"});
    }
    auto jail = launcher::make_jail_spawner(config_.jail_helper, jail_extra);
    if (config_.fork_server) {
      fork_server_ = std::make_unique<ForkServer>(io_, config_.zygote_binary, config_.runtime_dir);
      if (!fork_server_->start()) fork_server_.reset();
    }
    spawner_ = fork_server_ ? launcher::make_zygote_spawner(fork_server_->socket(), std::move(jail), jail_extra,
                                                            std::chrono::seconds(config_.fork_server_timeout_s))
                            : std::move(jail);
    if (config_.egress) start_egress_proxy();
  }
  if (!config_.seed_notebook.empty()) {
    auto seed = load_seed(config_.seed_notebook);
    if (!seed) throw ConfigError("--seed-notebook: " + seed.error().message);
    if (seed.value()->language.empty() && seed.value()->kernel_name.empty())
      throw ConfigError("--seed-notebook: " + config_.seed_notebook +
                        " declares no language (metadata.kernelspec.language or metadata.language_info.name)");
    global_seed_ = seed.value();
  }
  const auto specs = kernelspecs();
  for (const auto& [name, spec] : specs) {
    auto network = kernelspec_network(spec, config_.egress_ip_rules);
    if (*network && (*network)->mode != egress::Mode::kNone && !egress_)
      throw ConfigError("kernelspec " + name + ": metadata.cellgate.network needs the egress proxy (--egress on, --spawner jail)");
  }
  if (specs.count(config_.default_kernel) == 0)
    common::log_warn("msg=\"default kernelspec not found\" name={}", config_.default_kernel);
  if (!config_.pool.empty()) {
    if (config_.spawner != "jail")
      throw ConfigError("--pool needs --spawner jail (a claim mounts the owner's workspace into the kernel's jail)");
    std::map<std::string, ClaimCode> code;
    for (const auto& [name, n] : config_.pool) {
      auto s = specs.find(name);
      if (s == specs.end()) throw ConfigError("--pool: no kernelspec named " + name);
      // A claim enters the workspace and sets the owner's env in the kernel's own language.
      auto claim = claim_code_for(s->second);
      if (!claim) throw ConfigError("--pool: " + claim.error().message);
      code[name] = std::move(claim.value());
    }
    WarmPoolOptions po{config_.pool, std::move(code), config_.pool_max_memory, config_.pool_concurrency};
    pool_ = std::make_unique<WarmPool>(io_, po, config_.jail_helper,
                                       [this](const std::string& spec) { return make_pool_kernel(spec); });
    // Recorded as nobody's: start_services() shuts down whatever a crashed gateway left in its pool.
    pool_->set_on_ready([this](const std::shared_ptr<KernelHub>& hub) { record_pool_kernel(*hub); });
  }
  IdleOptions idle{config_.cull_idle_timeout_s, config_.cull_interval_s, config_.cull_busy, config_.cull_connected,
                   config_.pause_after_s};
  idle_ = std::make_unique<IdleWatch>(io_, idle, kernels_, [this](const std::string& id) {
    if (services_.metrics) services_.metrics->kernel_culled();
    if (auto it = kernels_.find(id); it != kernels_.end()) publish(events::EventType::kKernelCulled, *it->second, {});
    asio::co_spawn(io_, remove(id, "culler"), asio::detached);
  });
  idle_->start();
}

KernelManager::~KernelManager() { ++*resync_; }  // a resync still awaiting must not touch us

std::map<std::string, launcher::KernelSpec> KernelManager::kernelspecs() const {
  return launcher::discover_kernelspecs(kernelspec_path_);
}

std::shared_ptr<KernelHub> KernelManager::make_hub(launcher::KernelOptions options, const std::string& owner,
                                                   const std::string& workspace, const state::User* user, bool listed) {
  apply_liveness(config_, options);
  options.cgroup_owner = cgroup_owner_for(owner);
  const int pause_after = pause_after_for(config_, options.spec);
  auto kernel = std::make_shared<launcher::Kernel>(io_, *spawner_, std::move(options));
  auto hub = std::make_shared<KernelHub>(kernel, config_.replay_bytes);
  hub->set_metrics(services_.metrics);
  hub->set_lifecycle_hook(lifecycle_hook(*hub));
  hub->owner = owner;
  hub->workspace = workspace;
  hub->pause_after_s = pause_after;
  hub->fence = fence_;
  kernel->set_observer(hub.get());
  // Each launch's process goes to the kernel's row: a gateway killed after a restart re-adopts the
  // kernel by this pid (before, the row kept the first process's, and the kernel was found dead).
  kernel->set_spawned_hook([&db = services_.db, id = kernel->id()](const launcher::ProcessHandle& p) {
    (void)state::set_kernel_helper(db, id, p.pid, p.status_file);
  });
  kernel->set_relaunch_gate([weak = std::weak_ptr<KernelHub>(hub), gate = std::weak_ptr<StartGate>(gate_)] {
    return relaunch_turn(weak, gate);
  });
  hub->set_execute_limit(std::chrono::seconds(execute_limit_for(config_, user)));
  if (Snapshots* snapshots = services_.snapshots) {
    std::weak_ptr<KernelHub> weak = hub;
    hub->set_execute_reply_hook([snapshots, weak](protocol::Message reply, KernelHub::Deliver deliver) {
      if (auto h = weak.lock()) snapshots->after_execute(h, std::move(reply), std::move(deliver));
    });
    hub->set_baseline_taker([snapshots, weak](std::function<void(std::string, std::string, uint64_t)> done) {
      if (auto h = weak.lock()) snapshots->baseline(h, std::move(done));
    });
  }
  if (listed) kernels_[kernel->id()] = hub;
  return hub;
}

awaitable<common::Result<std::shared_ptr<KernelHub>>> KernelManager::start(const state::User& user,
                                                                          StartOptions options) {
  std::string name = options.name.empty() ? config_.default_kernel : options.name;
  if (!launcher::valid_kernelspec_name(name)) co_return make_error(Errc::kBadRequest, "invalid kernel name");
  auto specs = kernelspecs();
  auto spec = specs.find(name);
  if (spec == specs.end()) co_return make_error(Errc::kNotFound, "No such kernel named " + name);
  int owned = starting_.count(user.name) ? starting_.at(user.name) : 0;
  for (const auto& [id, hub] : kernels_) owned += hub->owner == user.name ? 1 : 0;
  int64_t max_user = user.limits.max_kernels ? *user.limits.max_kernels : config_.max_kernels_per_user;
  // A placed start had the owner's quota counted across the cluster, in the placement's transaction.
  if (options.placed_id.empty() && max_user > 0 && owned >= max_user) {
    if (services_.metrics) services_.metrics->request_refused(metrics::RefusedReason::kQuota);
    if (services_.events)
      services_.events->publish(events::EventType::kQuotaRefused, user.name,
                                {{"limit", "max_kernels"}, {"value", max_user}, {"kernelspec", name}});
    co_return make_error(Errc::kForbidden, fmt::format("quota exceeded: max_kernels ({}) for user {}", max_user, user.name));
  }
  int total = static_cast<int>(kernels_.size());
  for (const auto& [u, n] : starting_) total += n;
  if (config_.max_kernels > 0 && total >= config_.max_kernels) {
    if (services_.metrics) services_.metrics->request_refused(metrics::RefusedReason::kLimit);
    co_return make_error(Errc::kForbidden, fmt::format("Resource Limit: max_kernels ({}) reached", config_.max_kernels));
  }
  Starting counted(starting_, user.name);  // from the check above, with no suspension in between
  auto network = kernel_network(spec->second, user, options.network, config_.egress_ip_rules);
  if (!network) co_return network.error();
  const bool networked = network->mode != egress::Mode::kNone;
  if (networked && !egress_)
    co_return make_error(Errc::kBadRequest, "network: this gateway runs no egress proxy (--egress off)");
  if (networked && !egress_->unreachable().empty()) co_return make_error(Errc::kUnavailable, "network: " + egress_->unreachable());
  auto client_env = launcher::filter_client_env(options.env, config_.allow_env);
  if (!client_env) co_return client_env.error();
  std::shared_ptr<const Seed> seed = options.seed;
  if (!seed) {
    auto found = seed_for(spec->second, global_seed_);
    if (!found) co_return found.error();
    seed = found.value();
  }
  // What is left (the workspace, the proxy's policy, the claim or spawn) waits for a slot; the checks
  // above cost nothing worth bounding.
  const std::string who = user.name;  // named: GCC 12 can destroy a temporary in a co_await operand twice
  auto slot = co_await gate_->enter(who);
  if (!slot) {
    if (services_.metrics) services_.metrics->request_refused(metrics::RefusedReason::kLimit);
    co_return slot.error();
  }

  const std::string id = options.placed_id.empty() ? common::random_uuid() : options.placed_id;
  std::string ws_name = options.workspace;
  if (ws_name.empty() && client_env->count("KERNEL_WORKSPACE")) ws_name = client_env->at("KERNEL_WORKSPACE");
  if (options.ephemeral) ws_name = "tmp-" + id.substr(0, 8);
  if (ws_name.empty()) ws_name = "default";
  if (auto st = workspace::validate_name(ws_name); !st) co_return make_error(Errc::kBadRequest, "workspace: " + st.error().message);
  auto& workspaces = services_.workspaces;
  // With a workspace volume, ensure also applies the owner's quota to the tree (a live limit).
  workspace::WorkspaceRef ref{user.name, ws_name, workspace_config_for(workspaces.config(), user).max_bytes};
  auto ws = co_await services_.offload.run([&] { return workspaces.ensure(ref); });
  if (!ws) co_return ws.error();
  // With a shared store the workspace may have run on another node since this one held it (that node
  // was lost, or placement moved it): its newest snapshot is restored here first (docs/cluster.md §6).
  auto caught_up = co_await services_.offload.run([&] { return ws->catch_up(); });
  if (!caught_up) co_return make_error(caught_up.error().code, "workspace " + ws_name + ": restoring its newest snapshot "
                                                               "from the shared store: " + caught_up.error().message);
  if (caught_up.value())
    common::log_info("kernel={} user={} workspace={} snapshot={} msg=\"workspace restored from the shared store\"", id,
                     user.name, ws_name, *caught_up.value());
  auto ko = cold_start_plan(config_, read_budget_, id, spec->second, user, ws_name, ws->tree_path(), client_env.value());
  const json network_json = egress::policy_json(network.value());
  if (networked) {
    // The proxy holds the policy before the jail announces itself under the kernel's id.
    const json request = {{"op", "set"}, {"kernel", id}, {"user", user.name}, {"policy", network_json}};
    auto set = co_await egress_->ask(request);
    if (!set) {
      const Errc code = set.error().code == Errc::kBadRequest ? Errc::kBadRequest : Errc::kUnavailable;
      co_return make_error(code, "network: " + set.error().message);
    }
    route_through_egress(ko);
  }

  const auto began = std::chrono::steady_clock::now();
  auto seconds_since = [began] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count(); };
  if (pool_ && !networked) {  // a pooled kernel has no endpoint: a networked one starts cold
    // A warm kernel when one fits; anything else (none ready, env it cannot take) starts cold.
    auto claimed = co_await pool_->claim(ko, user.name);
    if (claimed) {
      auto& kernel = claimed->kernel();
      claimed->owner = user.name;
      kernel.set_cgroup_owner(cgroup_owner_for(user.name));  // from its next launch (a restart) on
      claimed->workspace = ws_name;
      claimed->ephemeral = options.ephemeral;
      claimed->workspace_config = workspace_config_for(workspaces.config(), user);
      claimed->set_execute_limit(std::chrono::seconds(execute_limit_for(config_, &user)));
      state::KernelRecord rec{kernel.id(), user.name, name, ws_name, kernel.options().runtime_dir, kernel.process().pid,
                              kernel.process().status_file, common::iso8601_now(), "running", config_.node_id};
      // Its record as a pool kernel becomes the user's, in one transaction. A kernel without a row would
      // not count against any quota nor be re-adopted after a restart: it is shut down instead.
      if (auto st = record_claimed(kernel.id(), rec, options.placed_id); !st) {
        common::log_error("kernel={} msg=\"cannot record kernel\" error=\"{}\"", kernel.id(), st.error().message);
        co_await kernel.shutdown();
        co_return st.error();
      }
      kernels_[kernel.id()] = claimed;
      counted.done();
      if (options.journal) open_journal(*claimed, options.snapshots);
      audit(user.name, "start", kernel.id(), {{"kernelspec", name}, {"workspace", ws_name}, {"pool", true}});
      common::log_info("kernel={} name={} owner={} msg=\"pooled kernel claimed\"", kernel.id(), name, user.name);
      if (services_.metrics) services_.metrics->kernel_started(metrics::StartPath::kWarmPool, seconds_since());
      publish(events::EventType::kKernelStarted, *claimed, {{"path", "warm_pool"}});
      co_return claimed;
    }
  }
  auto hub = make_hub(std::move(ko), user.name, ws_name, &user);
  counted.done();  // listed: kernels_ counts it now
  hub->ephemeral = options.ephemeral;
  hub->network = network_json;
  hub->egress_endpoint = networked;
  hub->workspace_config = workspace_config_for(workspaces.config(), user);
  if (!options.snapshots) {
    hub->set_execute_reply_hook(nullptr);
    hub->set_baseline_taker(nullptr);
  }
  auto& kernel = hub->kernel();
  if (seed && !seed->cells.empty()) {
    // On every launch of this kernel (restarts too), before it is declared ready.
    std::weak_ptr<KernelHub> weak = hub;
    auto timeout = std::chrono::seconds(config_.seed_timeout_s);
    auto failure = options.seed_failure;
    kernel.set_ready_hook([weak, seed, timeout, failure]() { return run_seed(weak, seed, timeout, failure); });
  }
  state::KernelRecord rec{id, user.name, name, ws_name, kernel.options().runtime_dir, 0, "",
                          common::iso8601_now(), "starting", config_.node_id};
  if (networked) rec.network = network_json.dump();
  auto recorded = options.placed_id.empty() ? state::insert_kernel(services_.db, rec)
                                            : state::confirm_placed_kernel(services_.db, id, rec);
  if (!recorded) {
    const auto& st = recorded;
    // No row, no kernel: it would escape the quota and be lost at the next restart.
    common::log_error("kernel={} msg=\"cannot record kernel\" error=\"{}\"", id, st.error().message);
    kernels_.erase(id);
    co_await kernel.shutdown();  // never started; this removes its runtime dirs
    if (networked) co_await forget_egress(id);
    forget_workspace_if_unused(*hub);
    co_return st.error();
  }
  // Only a kernel with a row has a journal: one opened before would be left open for good, listed as a
  // live kernel's and never dropped by retention (nothing re-adopts a kernel without a row to close it).
  if (options.journal) open_journal(*hub, options.snapshots);
  auto st = co_await kernel.start();
  if (!st) {
    kernels_.erase(id);
    co_await kernel.shutdown();  // the process is gone already; this removes its runtime dirs
    if (networked) co_await forget_egress(id);
    if (hub->journal()) services_.journal->closed(*hub->journal());
    forget_workspace_if_unused(*hub);
    (void)state::delete_kernel(services_.db, id);
    if (options.ephemeral) {
      co_await services_.offload.run([&] { return workspaces.remove(ref); });
      (void)unindex_workspace(services_.db, ref);
    }
    audit(user.name, "start", id, {{"kernelspec", name}, {"error", st.error().message}}, false);
    count_start_failure(st.error().message);
    common::log_error("kernel={} msg=\"kernel failed to start\" error=\"{}\"", id, st.error().message);
    // A deadline that passed is 504 and a fork server that did not answer 503 (try again): neither is
    // the kernel's fault nor ours. A kernel that died while starting (its state says why) is 500, as
    // jupyter_server answers it.
    const Errc code = st.error().code == Errc::kTimeout || st.error().code == Errc::kUnavailable ? st.error().code
                                                                                                   : Errc::kInternal;
    co_return make_error(code, "kernel failed to start: " + st.error().message);
  }
  (void)state::set_kernel_helper(services_.db, id, kernel.process().pid, kernel.process().status_file);
  (void)state::set_kernel_state(services_.db, id, "running");
  audit(user.name, "start", id, {{"kernelspec", name}, {"workspace", ws_name}, {"network", network_json}});
  common::log_info("kernel={} name={} owner={} msg=\"kernel started\"", id, name, user.name);
  const auto path = kernel.process().forked ? metrics::StartPath::kForkServer : metrics::StartPath::kCold;
  if (services_.metrics) services_.metrics->kernel_started(path, seconds_since());
  publish(events::EventType::kKernelStarted, *hub, {{"path", path == metrics::StartPath::kCold ? "cold" : "fork_server"}});
  co_return hub;
}

awaitable<common::Status> KernelManager::restart(std::shared_ptr<KernelHub> hub, std::string who) {
  sample_cpu(*hub);  // the restarted process's cgroup counts from zero
  auto st = co_await hub->kernel().restart();
  audit(who, "restart", hub->kernel().id(), json::object(), st.has_value());
  if (st && services_.metrics) services_.metrics->kernel_restarted(metrics::RestartReason::kRequested);
  if (st) publish(events::EventType::kKernelRestarted, *hub, {{"by", who}});
  co_return st;
}

void KernelManager::forget_workspace_if_unused(const KernelHub& gone) {
  // inotify watches come from a host-wide budget (fs.inotify.max_user_watches): a workspace no
  // kernel uses any more is not watched.
  for (const auto& [id, hub] : kernels_)
    if (hub->owner == gone.owner && hub->workspace == gone.workspace) return;
  if (services_.snapshots) services_.snapshots->forget(workspace::WorkspaceRef{gone.owner, gone.workspace});
}

awaitable<void> KernelManager::remove(std::string id, std::string who) {
  auto it = kernels_.find(id);
  if (it == kernels_.end()) co_return;
  auto hub = it->second;
  kernels_.erase(it);
  (void)state::delete_kernel(services_.db, id);  // its sessions go with it (foreign key)
  hub->close_all("kernel deleted");
  sample_cpu(*hub);  // its cgroup goes with it
  co_await hub->kernel().shutdown();
  // Its endpoint closed with the jail's init; the policy and its counters go now.
  if (hub->egress_endpoint) co_await forget_egress(id);
  if (hub->journal()) services_.journal->closed(*hub->journal());
  forget_workspace_if_unused(*hub);
  if (hub->ephemeral) {
    workspace::WorkspaceRef ref{hub->owner, hub->workspace};
    auto& workspaces = services_.workspaces;
    co_await services_.offload.run([&] { return workspaces.remove(ref); });
    (void)unindex_workspace(services_.db, ref);
  }
  audit(who, "stop", id, {{"owner", hub->owner}});
  publish(events::EventType::kKernelStopped, *hub, {{"by", who}});
  common::log_info("kernel={} by={} msg=\"kernel deleted\"", id, who);
}

std::shared_ptr<KernelHub> KernelManager::find(const std::string& id, const state::User& user) const {
  auto it = kernels_.find(id);
  if (it == kernels_.end() || !visible_to(*it->second, user)) return nullptr;
  return it->second;
}

json KernelManager::pool_status() const { return pool_ ? pool_->status() : json(); }

json KernelManager::starts_status() const { return gate_->status(); }

std::shared_ptr<KernelHub> KernelManager::make_pool_kernel(const std::string& name) {
  auto specs = kernelspecs();
  auto spec = specs.find(name);
  if (spec == specs.end()) {
    common::log_error("spec={} msg=\"pool kernelspec is gone\"", name);
    return nullptr;
  }
  return make_hub(pool_plan(config_, read_budget_, common::random_uuid(), spec->second), "", "", nullptr, false);
}

void KernelManager::open_journal(KernelHub& hub, bool snapshots) {
  if (!services_.journal) return;
  auto& k = hub.kernel();
  hub.set_journal(services_.journal->open(k.id(), hub.owner, k.options().spec.name, hub.workspace,
                                          snapshots && services_.snapshots != nullptr));
}

void KernelManager::record_pool_kernel(const KernelHub& hub) {
  auto& k = const_cast<KernelHub&>(hub).kernel();
  state::KernelRecord rec{k.id(), kPoolOwner, k.options().spec.name, "", k.options().runtime_dir,
                          k.process().pid, k.process().status_file, common::iso8601_now(), "pool", config_.node_id};
  if (auto st = state::insert_kernel(services_.db, rec); !st)
    common::log_error("kernel={} msg=\"cannot record pool kernel\" error=\"{}\"", k.id(), st.error().message);
}

common::Status KernelManager::record_claimed(const std::string& id, const state::KernelRecord& rec,
                                             const std::string& placed_id) {
  auto tx = state::Transaction::begin(services_.db);
  if (!tx) return tx.error();
  if (auto st = state::delete_kernel(services_.db, id); !st && st.error().code != Errc::kNotFound) return st;
  auto st = placed_id.empty() ? state::insert_kernel(services_.db, rec)
                              : state::confirm_placed_kernel(services_.db, placed_id, rec);
  if (!st) return st;
  return tx->commit();
}

void KernelManager::audit(const std::string& user, const std::string& action, const std::string& id, json detail,
                          bool ok) {
  services_.audit.record(user, action, "kernel", id, std::move(detail), ok);
}

}  // namespace cellgate::gateway
