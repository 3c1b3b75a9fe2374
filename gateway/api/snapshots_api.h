// SPDX-License-Identifier: BSD-3-Clause
// snapshots_api: a workspace's snapshots: list (from the database index), take, the manifest,
// delete, restore (in place or into a new workspace), a tar archive, and the diff of two.
#pragma once

#include <string>

#include "events/event_log.h"
#include "gateway/api/route.h"
#include "metrics/gateway_metrics.h"

namespace cellgate::gateway {
class Audit;
class Offload;
}  // namespace cellgate::gateway
namespace cellgate::state {
class Database;
}

namespace cellgate::api {

class SnapshotsApi {
 public:
  // staging: where archives are staged (an unnamed file, never held in memory).
  SnapshotsApi(workspace::WorkspaceManager& workspaces, state::Database& db, gateway::Offload& offload,
               gateway::Audit& audit, std::string base_url, std::string staging, events::EventLog& events,
               metrics::GatewayMetrics& metrics)
      : workspaces_(workspaces), db_(db), offload_(offload), audit_(audit), base_url_(std::move(base_url)),
        staging_(std::move(staging)), events_(events), metrics_(metrics) {}
  boost::asio::awaitable<http::Reply> list(Call& call);
  boost::asio::awaitable<http::Reply> take(Call& call);
  boost::asio::awaitable<http::Reply> get(Call& call);
  boost::asio::awaitable<http::Reply> remove(Call& call);
  boost::asio::awaitable<http::Reply> restore(Call& call);
  boost::asio::awaitable<http::Reply> archive(Call& call);
  boost::asio::awaitable<http::Reply> diff(Call& call);

 private:
  // After a store operation that made snapshots the gateway did not take itself (fork, restore).
  boost::asio::awaitable<void> resync_index(workspace::WorkspaceRef ref);

  workspace::WorkspaceManager& workspaces_;
  state::Database& db_;
  gateway::Offload& offload_;
  gateway::Audit& audit_;
  std::string base_url_;
  std::string staging_;
  events::EventLog& events_;
  metrics::GatewayMetrics& metrics_;
};

}  // namespace cellgate::api
