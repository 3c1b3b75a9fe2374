// SPDX-License-Identifier: BSD-3-Clause
// gateway: the composition root of the server's services.
#include "gateway/gateway.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/detached.hpp>

#include "common/log.h"
#include "gateway/audit.h"
#include "gateway/auth.h"
#include "gateway/database_call.h"
#include "gateway/execute_snapshot.h"
#include "gateway/http/peer_client.h"
#include "gateway/kernel_manager.h"
#include "gateway/fence_freezer.h"
#include "gateway/node_membership.h"
#include "gateway/offload.h"
#include "gateway/runtime_dirs.h"
#include "gateway/snapshot_index.h"
#include "journal/journal.h"
#include "kernel-launcher/spawner.h"
#include "state/audit_log.h"
#include "state/database.h"
#include "state/database_thread.h"
#include "state/users.h"
#include "workspace/volume.h"
#include "workspace/workspace_manager.h"

namespace cellgate::gateway {

namespace asio = boost::asio;

Gateway::Gateway(boost::asio::io_context& io, Config config, std::unique_ptr<launcher::Spawner> spawner)
    : io_(io),
      config_(std::move(config)),
      started_(std::chrono::system_clock::now()),
      events_(static_cast<uint64_t>(
                  std::chrono::duration_cast<std::chrono::milliseconds>(started_.time_since_epoch()).count()),
              [this] {
                events::EventLogLimits limits;
                limits.max_events = static_cast<size_t>(config_.events_buffer);
                return limits;
              }()) {
  prepare_runtime_dirs(config_);
  make_dirs(config_.data_dir, 0700);
  // One node per PostgreSQL database unless the nodes are a cluster, each with its own row in the nodes
  // table (docs/cluster.md); a database that starts after the gateway (a Kubernetes rollout) is waited for.
  state::DatabaseOptions db_options;
  db_options.single_node = !config_.clustered();
  db_options.connect_wait = std::chrono::seconds(30);
  auto db = state::Database::connect(config_.database, config_.data_dir, db_options);
  if (!db) throw ConfigError("cannot open the state database: " + db.error().message);
  db_ = std::make_unique<state::Database>(std::move(db.value()));
  users_ = std::make_unique<state::UserStore>(*db_);
  users_->set_single_token(config_.token);
  auth_ = std::make_unique<Authenticator>(*users_, *db_, config_);
  db_calls_ = std::make_unique<DatabaseCalls>(*db_, kMaxRequestCalls);
  auto audit = state::AuditLog::open(*db_, config_.data_dir);
  if (!audit) throw ConfigError("cannot open the audit log: " + audit.error().message);
  audit_log_ = std::make_unique<state::AuditLog>(std::move(audit.value()));
  audit_ = std::make_unique<Audit>(*audit_log_);
  workspace::WorkspaceConfig wc;
  wc.max_bytes = config_.workspace_bytes;
  wc.owner_max_bytes = config_.user_workspace_bytes;
  wc.max_files = config_.workspace_files;
  wc.store_bytes = config_.store_bytes;
  wc.keep_auto = config_.snapshot_keep;
  wc.tree_uid = 1000;  // the jail's `sandbox` user owns workspace trees on disk (idmapped into each jail)
  wc.tree_gid = 1000;
  wc.volume = config_.workspace_volume == "on"    ? workspace::VolumeMode::kOn
              : config_.workspace_volume == "off" ? workspace::VolumeMode::kOff
                                                  : workspace::VolumeMode::kAuto;
  wc.volume_bytes = config_.workspace_volume_bytes;
  wc.store_dir = config_.store_dir;
  auto ws = workspace::WorkspaceManager::open(config_.data_dir, wc);
  if (!ws) throw ConfigError("cannot open the workspace store: " + ws.error().message);
  workspaces_ = std::move(ws.value());
  if (workspaces_->volume() == nullptr)
    common::log_warn("msg=\"no workspace volume ({}): workspace sizes are checked at snapshots only, not as files are "
                     "written, and a jail's /proc/self/mountinfo shows its workspace's host path\"",
                     config_.workspace_volume == "off" ? "--workspace-volume off" : "not root");
  try {
    finish_setup(std::move(spawner));
  } catch (...) {
    // No kernel can use the workspace volume yet: a gateway that cannot start leaves no mount.
    release_volume_if_unused();
    throw;
  }
}

void Gateway::finish_setup(std::unique_ptr<launcher::Spawner> spawner) {
  // The store is the truth for content: rows it has no snapshot for go, snapshots without a row get one.
  auto reconciled = reconcile_snapshot_index(*db_, *workspaces_);
  if (!reconciled) throw ConfigError("cannot reconcile the snapshot index: " + reconciled.error().message);
  if (reconciled->rebuilt || reconciled->dropped)
    common::log_info("msg=\"snapshot index reconciled with the store\" rebuilt={} dropped={}", reconciled->rebuilt,
                     reconciled->dropped);
  offload_ = std::make_unique<Offload>(2);
  // The io thread's connection is the io thread's alone. What writes on the execute path does so from a
  // thread of its own, on a connection of its own, so that a database that stops answering holds that
  // thread, never the io thread and every kernel's traffic with it: the journal, and the snapshot index.
  auto connect = [spec = config_.database, dir = config_.data_dir] {
    state::DatabaseOptions options;
    options.connect_wait = std::chrono::seconds(30);
    return state::Database::connect(spec, dir, options);
  };
  journal_ = std::make_unique<journal::Journal>(io_, *db_, journal_config(config_), connect, *workspaces_);
  if (auto st = journal_->start(); !st)
    throw ConfigError("cannot open the journal's database connection: " + st.error().message);
  db_thread_ = std::make_unique<state::DatabaseThread>(state::DatabaseThreadOptions{}, connect);
  if (auto st = db_thread_->start(); !st)
    throw ConfigError("cannot open the database thread's connection: " + st.error().message);
  // A PostgreSQL round trip (or a server that hangs) must not hold the io thread, which every client
  // shares: every request's token is looked up there, and the rows that route a request to a kernel's
  // node are read there. SQLite's are local reads, kept inline.
  if (db_->kind() == state::BackendKind::kPostgres) {
    auth_->look_up_on(db_thread_.get());
    db_calls_->run_on(db_thread_.get());
  }
  snapshots_ = std::make_unique<Snapshots>(io_, *workspaces_, *db_thread_, *offload_, &metrics_, &events_);
  kernels_ = std::make_unique<KernelManager>(
      io_, config_,
      KernelManager::Services{*db_, *users_, *workspaces_, *offload_, *audit_, snapshots_.get(), &metrics_, &events_,
                              journal_.get()},
      std::move(spawner));
  if (config_.clustered()) {
    MembershipOptions mo{config_.node_id, config_.cluster_advertise, CELLGATE_VERSION,
                         std::chrono::seconds(config_.node_lease_s), std::chrono::milliseconds(config_.node_lease_s * 200)};
    auto load = [this] {
      state::NodeLoad l = host_memory();
      l.kernels = static_cast<int64_t>(kernels_->kernels().size());
      l.max_kernels = config_.max_kernels;
      return l;
    };
    auto lost = [this] {
      asio::co_spawn(io_, [this]() -> asio::awaitable<void> {
        // The io thread's connection may find the database gone only now (the heartbeat's own found it
        // back first): the fence stays suspended, and the kernels frozen, until the dead are ended.
        asio::steady_timer retry(io_);
        while (!co_await kernels_->end_dead_kernels("node lost")) {
          retry.expires_after(std::chrono::seconds(1));
          co_await retry.async_wait(asio::use_awaitable);
        }
        membership_->fence()->resume();  // what remains here was never declared dead
      }, asio::detached);
    };
    peers_ = std::make_unique<http::PeerClient>(
        io_.get_executor(), http::make_cluster_client_context(config_.cluster_cert, config_.cluster_key, config_.cluster_ca),
        std::chrono::seconds(config_.kernel_start_timeout_s) / 10 + std::chrono::seconds(1));
    // The heartbeat's own connection, on its own thread: a statement that hangs holds that thread for
    // its deadline, never the io thread. It connects again by itself, each beat, without waiting.
    auto heartbeat_connect = [spec = config_.database, dir = config_.data_dir] {
      return state::Database::connect(spec, dir, state::DatabaseOptions{});
    };
    fence_freezer_ = std::make_unique<FenceFreezer>(kernels_->kernels());
    auto fenced = [this](bool down) { fence_freezer_->fenced(down); };
    membership_ = std::make_unique<NodeMembership>(io_, *db_, std::move(heartbeat_connect), std::move(mo), load, lost, fenced);
    kernels_->set_fence(membership_->fence());
    // Before re-adoption: a node id held by a live node elsewhere is a configuration error.
    if (auto joined = membership_->join(); !joined) throw ConfigError("cannot join the cluster: " + joined.error().message);
  }
}

Gateway::~Gateway() {
  // Blocking work in flight uses the services below: it ends before they go.
  if (offload_) offload_->join();
  if (journal_) journal_->stop();
  if (db_thread_) db_thread_->stop();
  // Ended without stop() (a start-up failure after the constructor): with no kernel, no mount stays.
  release_volume_if_unused();
}

boost::asio::awaitable<void> Gateway::start() {
  // Heartbeats first: re-adopting many kernels may take longer than the lease.
  if (membership_) membership_->start();
  co_await kernels_->start_services();
}

boost::asio::awaitable<void> Gateway::stop() {
  if (membership_) membership_->stop();
  co_await kernels_->stop();
  journal_->stop();
  db_thread_->stop();
  // Kernels that live on keep using the workspace volume: it stays mounted for them and the next start.
  release_volume_if_unused();
}

void Gateway::release_volume_if_unused() {
  if (kernels_ && !kernels_->kernels().empty()) return;
  if (workspaces_ && workspaces_->volume() != nullptr) workspaces_->volume()->release();
}

}  // namespace cellgate::gateway
