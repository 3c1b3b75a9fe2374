// SPDX-License-Identifier: BSD-3-Clause
// node_membership: this node's row in the cluster's nodes table (docs/cluster.md §3): joining, the
// heartbeat that renews its lease, and the sweep that declares the nodes that missed theirs lost.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/result.h"
#include "gateway/lease_fence.h"
#include "state/node_records.h"

namespace cellgate::state {
class Database;
}

namespace cellgate::gateway {

struct MembershipOptions {
  std::string node_id;
  std::string address;  // the internal listener other nodes dial, host:port
  std::string version;
  std::chrono::milliseconds lease{10000};
  std::chrono::milliseconds heartbeat{2000};
};

// Io thread only. Every time is the database server's: node clocks never matter.
class NodeMembership {
 public:
  // load: what the node reports at every renewal (memory, kernels). lost: called when this node finds
  // its own row lost (the others declared it dead, and its kernels with it); it has re-joined by then,
  // and its fence is suspended until lost resumes it.
  NodeMembership(boost::asio::io_context& io, state::Database& db, MembershipOptions options,
                 std::function<state::NodeLoad()> load, std::function<void()> lost);
  // Registers with a new incarnation. kConflict when a live node at another address holds the id.
  common::Result<state::Registration> join();
  // Heartbeats and sweeps every options.heartbeat until stop().
  void start();
  void stop();

  // Called after every renewal with the cluster's nodes as the database has them (a relay to a node
  // declared lost tells its client the kernel is dead). One observer; null removes it.
  void on_nodes(std::function<void(const std::vector<state::NodeRow>&)> fn) { on_nodes_ = std::move(fn); }

  // Holds while the last successful renewal was sent less than lease − 2 heartbeats ago (a sweeper
  // renews, reads the nodes and sweeps within its own heartbeat), and not while this node, found lost,
  // ends the kernels declared dead (the lost callback resumes it).
  const std::shared_ptr<LeaseFence>& fence() const { return fence_; }

  const std::string& id() const { return options_.node_id; }
  int64_t incarnation() const { return incarnation_; }

 private:
  void schedule();
  void beat();
  void sweep();

  state::Database& db_;
  MembershipOptions options_;
  std::function<state::NodeLoad()> load_;
  std::function<void()> lost_;
  std::function<void(const std::vector<state::NodeRow>&)> on_nodes_;
  std::shared_ptr<LeaseFence> fence_;
  bool fence_reported_ = false;  // the log line that this node stopped acting, once per outage
  boost::asio::steady_timer timer_;
  int64_t incarnation_ = 0;
  // Since when every renewal has succeeded; unset after a failure. A node sweeps only after a whole
  // lease of them: after a PostgreSQL outage everyone gets a lease to renew before anyone is swept.
  std::optional<std::chrono::steady_clock::time_point> healthy_since_;
};

// This host's memory (/proc/meminfo: MemTotal, MemAvailable), in bytes; zeros when unreadable.
state::NodeLoad host_memory();

}  // namespace cellgate::gateway
