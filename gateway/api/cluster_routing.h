// SPDX-License-Identifier: BSD-3-Clause
// cluster_routing: any node serves any kernel (docs/cluster.md §4, §5). A kernel held by another node
// is reached there: a request is forwarded and its answer returned, a kernel WebSocket relayed. A new
// kernel is placed by one transaction and started on the node placement picked.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <boost/asio/awaitable.hpp>

#include "gateway/api/route.h"
#include "gateway/kernel_manager.h"
#include "state/node_records.h"

namespace cellgate::gateway {
class Gateway;
}

namespace cellgate::api {

class KernelRelay;

// The header a node sends with a kernel start it forwards to the node placement picked: the id of the
// row placement wrote. Believed only on the internal listener (mutual TLS), else refused.
inline constexpr const char* kPlacedHeader = "X-Cellgate-Placed";

// Io thread only.
class ClusterRouting {
 public:
  explicit ClusterRouting(gateway::Gateway& gw);
  ~ClusterRouting();
  ClusterRouting(const ClusterRouting&) = delete;
  ClusterRouting& operator=(const ClusterRouting&) = delete;
  bool enabled() const;

  // While this node cannot renew its lease (gateway/lease_fence.h), a 503 for anything it would do
  // for its kernels or start: another node may be declaring it lost and its kernels dead.
  std::optional<http::Response> refuse_if_fenced(const Call& call) const;
  // {kernel} not held here: the kernel's row, if the caller may see it and another node holds it. Sets
  // call.remote; or an error reply (a dead kernel's answer, the database unavailable).
  // The rows are read through gw.db_calls(), charged to the caller: a database that does not answer
  // holds this request (then 503 naming it), not the io thread.
  boost::asio::awaitable<std::optional<http::Response>> resolve_remote(Call& call, const std::string& id);
  // The call forwarded to the node holding its kernel, with the answer it gave.
  boost::asio::awaitable<http::Reply> forward(Call& call);
  // The kernel WebSocket relayed to the node holding its kernel.
  boost::asio::awaitable<http::Upgrade> relay(Call& call, http::WsAccept accept);

  // A call about kernel_id that is not in its path (DELETE /api/sessions/{session} shuts its kernel
  // down): forwarded whole to the node holding that kernel, with its answer; nullopt when this node
  // holds it, or nobody does. A kernel dead with its node has its row deleted here (its sessions with
  // it), and nullopt: the caller finishes as for a kernel gone.
  boost::asio::awaitable<std::optional<http::Reply>> forward_for_kernel(Call& call, const std::string& kernel_id);

  // Before a kernel start (POST /api/kernels, a session that starts one): places the kernel. nullopt:
  // start it here with options.placed_id set (or not clustered); else the answer of the node that
  // started it, or the error.
  boost::asio::awaitable<std::optional<http::Reply>> place(Call& call, gateway::KernelManager::StartOptions& options);
  // After a start here that failed: the row placement wrote goes.
  void unplace(const std::string& placed_id);

  // Another node's kernel that user may see, as lists show it (from its row: the live fields are the
  // owner's, so execution_state is "unknown" unless the row says dead); nullopt when there is none.
  std::optional<nlohmann::json> remote_model(const std::string& id, const state::User& user);
  // Whether another node holds the kernel (its row names another node); the database's error when it
  // cannot answer, so that no caller takes an outage for a kernel that is gone.
  common::Result<bool> held_elsewhere(const std::string& id);
  // Every other node's kernel user may see, oldest first (an empty list on one machine); read through
  // gw.db_calls(), charged to user.
  boost::asio::awaitable<common::Result<std::vector<nlohmann::json>>> remote_models(const state::User& user);

 private:
  // call's request sent to the internal listener at address (the node holding row's kernel), its answer.
  boost::asio::awaitable<http::Reply> forward_to(Call& call, const state::KernelRecord& row, const std::string& address);
  // After every renewal: the relays to a node the cluster declared lost tell their clients the kernel
  // is dead (its connection may hang until TCP gives up).
  void on_nodes(const std::vector<state::NodeRow>& nodes);

  struct OpenRelay {
    std::string node;
    std::weak_ptr<KernelRelay> relay;
  };

  gateway::Gateway& gw_;
  std::vector<OpenRelay> relays_;  // pruned at every renewal; one per relayed client connection
};

}  // namespace cellgate::api
