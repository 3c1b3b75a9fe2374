// SPDX-License-Identifier: BSD-3-Clause
// node_records: the nodes table: joining the cluster, renewing a lease, and sweeping the nodes that
// missed theirs (docs/cluster.md). Every time is the database server's (cellgate_now_ms()).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "state/database.h"

namespace cellgate::state {

// What a node says of itself at every renewal. The placement reads it; it is checked on the way in
// (a node that reports nonsense gets it clamped, not believed).
struct NodeLoad {
  int64_t memory_total = 0;  // bytes placement may commit on the node
  int64_t memory_free = 0;   // measured now
  int64_t kernels = 0;       // running now
  int64_t max_kernels = 0;   // its --max-kernels; 0 = none
};

struct NodeRow {
  std::string id;
  std::string address;  // its internal listener, host:port
  std::string version;
  int64_t incarnation = 0;  // bumped at every (re)join: a stale process cannot renew a newer one's lease
  int64_t started_ms = 0;
  int64_t heartbeat_ms = 0;
  NodeLoad load{};
  std::string state;    // up | draining (serves, takes no new kernels) | lost
  int64_t age_ms = 0;   // the server's now − heartbeat_ms, as read
};

struct Registration {
  int64_t incarnation = 0;
  std::string previous_state;  // "" for a node never seen; "lost" when the others declared it lost
};

// Joins (or rejoins) as me.state ("up" or "draining") with a new incarnation and a fresh heartbeat.
// kConflict when another live process holds the id: its row renewed within lease_ms from another address.
common::Result<Registration> register_node(Database& db, const NodeRow& me, int64_t lease_ms);
enum class Renewal { kRenewed, kLost };
// kLost: the row is lost, gone, or held by another incarnation; the node must stop serving as itself.
common::Result<Renewal> renew_node(Database& db, const std::string& id, int64_t incarnation, const NodeLoad& load);
// In one transaction: every node (not lost yet) whose heartbeat is older than lease_ms becomes lost,
// its kernels dead with the reason "node lost", the rows placement left "placing" on it deleted.
// Idempotent; concurrent sweepers agree (row locks). Returns the nodes this sweep declared lost.
common::Result<std::vector<std::string>> sweep_lost_nodes(Database& db, int64_t lease_ms);
common::Result<std::vector<NodeRow>> list_nodes(Database& db);
common::Result<NodeRow> get_node(Database& db, const std::string& id);
// up <-> draining; kNotFound for no such node, kConflict for a lost one.
common::Status set_node_state(Database& db, const std::string& id, const std::string& state);
// The database server's clock.
common::Result<int64_t> server_now_ms(Database& db);

// A node id: [A-Za-z0-9._-]{1,64} (a host name, a pod name). kBadRequest otherwise.
common::Status validate_node_id(const std::string& id);

}  // namespace cellgate::state
