// SPDX-License-Identifier: BSD-3-Clause
// kernel_manager: the one owner of every kernel's life: start (cold, or claimed from the warm pool),
// seeds, restart, delete, culling, pausing, the fork server, and re-adoption after a gateway restart.
// Its definitions are split by concern: kernel_manager.cc (start, restart, delete),
// kernel_manager_adoption.cc (across gateway restarts), kernel_manager_network.cc (the egress proxy),
// kernel_manager_events.cc (the model, events and metrics).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "common/result.h"
#include "gateway/config.h"
#include "gateway/kernel_hub.h"
#include "events/event_log.h"
#include "metrics/gateway_metrics.h"
#include "gateway/seed.h"
#include "gateway/workspace_caps.h"
#include "kernel-launcher/kernelspec.h"
#include "kernel-launcher/read_budget.h"
#include "kernel-launcher/spawner.h"
#include "state/kernel_records.h"
#include "state/users.h"
#include "workspace/workspace.h"

namespace cellgate::state {
class Database;
}
namespace cellgate::workspace {
class WorkspaceManager;
}
namespace cellgate::journal {
class Journal;
}

namespace cellgate::gateway {

class Audit;
class EgressProxy;
class ForkServer;
class IdleWatch;
class Offload;
class Snapshots;
class StartGate;
class WarmPool;

// Whether user may see and use the kernel: its owner, or an admin.
bool visible_to(const KernelHub& hub, const state::User& user);

// Io thread only. Kernels are listed by id; a kernel in the warm pool is in no list until claimed.
class KernelManager {
 public:
  // Owners of kernels no user owns: the warm pool's, and notebook-http's. A crashed gateway leaves
  // theirs behind (they are in the database); start() shuts them down.
  static constexpr const char* kPoolOwner = "@pool";
  static constexpr const char* kNotebookHttpOwner = "notebook-http";

  struct Services {
    state::Database& db;
    state::UserStore& users;
    workspace::WorkspaceManager& workspaces;
    Offload& offload;
    Audit& audit;
    Snapshots* snapshots;  // after-execute snapshots; null = none (tests)
    metrics::GatewayMetrics* metrics = nullptr;  // where starts, restarts and refusals are counted
    events::EventLog* events = nullptr;          // where kernel events are told (GET /api/events)
    journal::Journal* journal = nullptr;  // execution journals; null = none
  };
  // spawner null: the config's (plain; or jail, behind the fork server when it is on). Throws
  // ConfigError for a configuration it cannot run (a missing jail helper, a bad --pool or seed).
  KernelManager(boost::asio::io_context& io, const Config& config, Services services,
                std::unique_ptr<launcher::Spawner> spawner = nullptr);
  ~KernelManager();
  KernelManager(const KernelManager&) = delete;
  KernelManager& operator=(const KernelManager&) = delete;

  struct StartOptions {
    std::string name;                               // kernelspec ("" = default)
    nlohmann::json env = nlohmann::json::object();  // the client's variables (filtered)
    std::string workspace;                          // "" = KERNEL_WORKSPACE or "default"
    bool ephemeral = false;                         // a workspace of its own, deleted with it
    std::shared_ptr<const Seed> seed;               // instead of the kernelspec's or --seed-notebook's
    bool snapshots = true;                          // snapshot the workspace after every execute
    std::shared_ptr<SeedFailure> seed_failure;      // filled when the seed fails, if set
    std::optional<nlohmann::json> network;          // a network policy asked for (kernel_network.h)
    std::string placed_id;  // in a cluster: the row placement wrote for this node ("placing"); its id
    bool journal = true;                            // keep an execution journal (reproductions keep none)
  };
  // A kernel for user: claimed from the warm pool when one fits, else started cold (and seeded). At
  // most --max-starting starts run at once (--max-starting-per-user of one user's); the rest wait in
  // a bounded queue (start_gate.h). Errors: kBadRequest (also a network policy that does not parse),
  // kNotFound (kernelspec), kForbidden (quota; a network past what the user may have), kUnavailable
  // (the egress proxy; the start queue full or its wait over; the fork server did not answer),
  // kTimeout, kInternal (the kernel died while starting: its reason in the message).
  boost::asio::awaitable<common::Result<std::shared_ptr<KernelHub>>> start(const state::User& user,
                                                                          StartOptions options);
  // By value: callers co_spawn them, and a reference would dangle by the time they resume.
  boost::asio::awaitable<common::Status> restart(std::shared_ptr<KernelHub> hub, std::string who);
  boost::asio::awaitable<void> remove(std::string id, std::string who);
  // The kernel if it exists and user may see it, else null (404, never 403: ids are no oracle).
  std::shared_ptr<KernelHub> find(const std::string& id, const state::User& user) const;
  const std::map<std::string, std::shared_ptr<KernelHub>>& kernels() const { return kernels_; }
  // Jupyter's kernel model, plus paused, connections, owner and workspace.
  nlohmann::json model(const KernelHub& hub) const;
  std::map<std::string, launcher::KernelSpec> kernelspecs() const;
  // The egress proxy's record of the kernel: policy, limits, counters and its last `recent` audit
  // lines (GET /api/kernels/{id}/egress). A kernel without network: its policy and nothing else.
  boost::asio::awaitable<common::Result<nlohmann::json>> egress(std::shared_ptr<KernelHub> hub, size_t recent) const;
  // PATCH /api/kernels/{id} {"network": ...}: the running kernel's policy replaced, judged as at start
  // against what its owner may have (kernel_network.h); the proxy cuts the connections the old policy
  // allowed. kConflict for a kernel started without network (its jail has no proxy endpoint);
  // kBadRequest / kForbidden as at start; kUnavailable when the proxy does not answer.
  boost::asio::awaitable<common::Result<nlohmann::json>> set_network(std::shared_ptr<KernelHub> hub, nlohmann::json requested,
                                                                    std::string who);
  // {spec: {size, ready, starting}}; null without a warm pool.
  nlohmann::json pool_status() const;
  // Where kernel events are counted (null in tests that give none).
  metrics::GatewayMetrics* metrics() const { return services_.metrics; }
  // {in_flight, queued, limits}: the starts now running and waiting (start_gate.h).
  nlohmann::json starts_status() const;

  // Re-adopts the kernels the database says are running, shuts down what a crashed gateway left of
  // the pool's and notebook-http's, then starts filling the warm pool.
  boost::asio::awaitable<void> start_services();
  // Stops the pool, the fork server and the timers; shuts kernels down (shutdown_kernels_on_exit) or
  // lets them run on, to be re-adopted by the next start.
  boost::asio::awaitable<void> stop();
  // In a cluster: ends this node's kernels whose rows the others marked dead (this node was declared
  // lost, docs/cluster.md §3); their clients are told why first. False when the rows could not be read.
  boost::asio::awaitable<bool> end_dead_kernels(std::string why);
  // In a cluster: this node's lease, given to every kernel's hub (before start_services).
  void set_fence(std::shared_ptr<const LeaseFence> fence) { fence_ = std::move(fence); }

 private:
  boost::asio::awaitable<void> adopt();
  // Starts cellgate-egress (--egress on); throws ConfigError when it cannot.
  void start_egress_proxy();
  // Routes a kernel with a network policy through the egress proxy: its endpoint in the jail's
  // options, the proxy's variables in its environment.
  void route_through_egress(launcher::KernelOptions& options) const;
  // Gives every running kernel's policy to the (restarted) proxy, and its jail's endpoint back: a
  // coroutine on the io thread (resync_egress spawns it), each step bounded, none blocking.
  void resync_egress();
  boost::asio::awaitable<void> resync_egress_now(std::shared_ptr<uint64_t> current, uint64_t mine);
  // Removes a kernel's policy and counters from the proxy (logged if it cannot).
  boost::asio::awaitable<void> forget_egress(std::string id);
  // A connection the proxy refused: counted (cellgate_egress_refused_total) and told to the
  // kernel's owner (egress_refused).
  void egress_refused(const nlohmann::json& record);
  // listed = false: a pool kernel, in nobody's list until it is claimed.
  std::shared_ptr<KernelHub> make_hub(launcher::KernelOptions options, const std::string& owner,
                                      const std::string& workspace, const state::User* user, bool listed = true);
  std::shared_ptr<KernelHub> make_pool_kernel(const std::string& spec);
  boost::asio::awaitable<std::shared_ptr<KernelHub>> claim_pooled(state::User user, launcher::KernelOptions cold,
                                                                  std::string ws_name, bool ephemeral);
  void record_pool_kernel(const KernelHub& hub);
  // A claimed pool kernel's row becomes rec (one transaction).
  // placed_id: the row placement wrote becomes it instead.
  common::Status record_claimed(const std::string& id, const state::KernelRecord& rec, const std::string& placed_id);
  // Starts the kernel's journal (when journals are kept).
  void open_journal(KernelHub& hub, bool snapshots);
  // Stops watching a deleted kernel's workspace unless another kernel uses it.
  void forget_workspace_if_unused(const KernelHub& gone);
  void audit(const std::string& user, const std::string& action, const std::string& id, nlohmann::json detail,
             bool ok = true);
  // Reads the kernel's CPU into the metrics' ledger before its process goes (shutdown, restart), so
  // that cellgate_kernel_cpu_seconds_total keeps what it used since the last scrape.
  void sample_cpu(KernelHub& hub);
  // A start that failed, counted (by path; by the jail's setup stage that failed, if it says).
  void count_start_failure(std::string_view error);
  // Tells the event stream (and the log) about a kernel that has an owner (not a warm-pool kernel).
  void publish(events::EventType type, const KernelHub& hub, nlohmann::json data);
  // Counts and tells what the kernel does on its own (pause, thaw, death, automatic restart).
  KernelHub::LifecycleHook lifecycle_hook(KernelHub& hub);

  boost::asio::io_context& io_;
  const Config& config_;
  Services services_;
  std::vector<std::string> kernelspec_path_;
  std::shared_ptr<launcher::ReadBudget> read_budget_;  // every kernel's large incoming messages
  std::unique_ptr<ForkServer> fork_server_;            // before spawner_, which connects to it
  std::unique_ptr<EgressProxy> egress_;                // null: --egress off (kernels keep loopback only)
  std::unique_ptr<launcher::Spawner> spawner_;
  std::shared_ptr<const Seed> global_seed_;            // --seed-notebook
  std::map<std::string, std::shared_ptr<KernelHub>> kernels_;
  // owner → their starts not yet listed in kernels_ (waiting for a slot, claiming): the quotas count them
  std::map<std::string, int> starting_;
  std::shared_ptr<StartGate> gate_;  // shared: a kernel's relaunch hook holds it weakly
  // The current egress resync's number: a newer one, stop() and the destructor bump it (resync_egress).
  std::shared_ptr<uint64_t> resync_ = std::make_shared<uint64_t>(0);
  std::unique_ptr<WarmPool> pool_;
  std::unique_ptr<IdleWatch> idle_;
  std::shared_ptr<const LeaseFence> fence_;  // null outside a cluster
};

}  // namespace cellgate::gateway
