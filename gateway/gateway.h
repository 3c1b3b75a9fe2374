// SPDX-License-Identifier: BSD-3-Clause
// gateway: the composition root of the server's services: the state database, users, the audit log,
// workspaces and their snapshots, and the kernel manager. Front ends (the REST API, notebook-http)
// are built on it and chosen by `cellgate serve`.
#pragma once

#include <memory>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>

#include "common/time_format.h"
#include "gateway/config.h"
#include "events/event_log.h"
#include "metrics/gateway_metrics.h"

namespace cellgate::http {
class PeerClient;
}
namespace cellgate::launcher {
class Spawner;
}
namespace cellgate::state {
class AuditLog;
class Database;
class DatabaseThread;
class UserStore;
}  // namespace cellgate::state
namespace cellgate::workspace {
class WorkspaceManager;
}
namespace cellgate::journal {
class Journal;
}

namespace cellgate::gateway {

class Audit;
class Authenticator;
class DatabaseCalls;
class KernelManager;
class NodeMembership;
class FenceFreezer;
class Offload;
class Snapshots;

// Io thread only, except the offload pool's work.
class Gateway {
 public:
  // Opens the data dir and prepares the runtime dirs; throws ConfigError (one line) when it cannot.
  // spawner: null = the config's (tests pass a fake one).
  Gateway(boost::asio::io_context& io, Config config, std::unique_ptr<launcher::Spawner> spawner = nullptr);
  ~Gateway();
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  // Re-adopts the kernels of an earlier run, then starts the warm pool.
  boost::asio::awaitable<void> start();
  // Kernels keep running (they are re-adopted next start) unless the config says otherwise.
  boost::asio::awaitable<void> stop();

  const Config& config() const { return config_; }
  boost::asio::io_context& io() { return io_; }
  common::SystemTime started() const { return started_; }
  state::Database& db() { return *db_; }
  // Statements that must not hold the io thread (gateway/database_call.h).
  state::DatabaseThread& db_thread() { return *db_thread_; }
  state::UserStore& users() { return *users_; }
  Authenticator& auth() { return *auth_; }
  // What a signed-in user's request reads and writes in the state database: awaited, never inline on
  // the io thread when the database is across a network (gateway/database_call.h).
  DatabaseCalls& db_calls() { return *db_calls_; }
  // Such calls waiting at once, from every user together (each user's share of the database thread's
  // queue is 64): with the token lookups' 256, the kernels' snapshot rows keep 256 of its 1024.
  static constexpr int kMaxRequestCalls = 512;
  Audit& audit() { return *audit_; }
  workspace::WorkspaceManager& workspaces() { return *workspaces_; }
  Offload& offload() { return *offload_; }
  KernelManager& kernels() { return *kernels_; }
  metrics::GatewayMetrics& metrics() { return metrics_; }
  events::EventLog& events() { return events_; }
  // In a cluster (--cluster-listen): this node's membership; else null.
  NodeMembership* membership() { return membership_.get(); }
  // In a cluster: the client of the other nodes' internal listeners; else null.
  http::PeerClient* peers() { return peers_.get(); }
  journal::Journal& journal() { return *journal_; }

 private:
  // The constructor once the workspaces are open: the snapshot index and the services.
  void finish_setup(std::unique_ptr<launcher::Spawner> spawner);
  // Unmounts the workspace volume unless a kernel (running on past a stop) still uses it.
  void release_volume_if_unused();
  // In construction order, destroyed the other way round; the destructor joins the offload pool
  // first, so that no work in flight outlives what it uses.
  boost::asio::io_context& io_;
  Config config_;
  common::SystemTime started_;
  metrics::GatewayMetrics metrics_;  // before everything that reports into it
  events::EventLog events_;          // likewise; its epoch is this process's start
  std::unique_ptr<state::Database> db_;
  std::unique_ptr<state::UserStore> users_;
  std::unique_ptr<Authenticator> auth_;
  std::unique_ptr<DatabaseCalls> db_calls_;
  std::unique_ptr<state::AuditLog> audit_log_;
  std::unique_ptr<Audit> audit_;
  std::unique_ptr<workspace::WorkspaceManager> workspaces_;
  std::unique_ptr<Offload> offload_;
  std::unique_ptr<journal::Journal> journal_;  // before the kernels, whose recorders write into it
  // The io thread's writes on the execute path (the snapshot index), on a thread and connection of its own.
  std::unique_ptr<state::DatabaseThread> db_thread_;
  std::unique_ptr<Snapshots> snapshots_;
  std::unique_ptr<KernelManager> kernels_;
  std::unique_ptr<NodeMembership> membership_;
  std::unique_ptr<FenceFreezer> fence_freezer_;
  std::unique_ptr<http::PeerClient> peers_;
};

}  // namespace cellgate::gateway
