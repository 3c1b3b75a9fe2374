// SPDX-License-Identifier: BSD-3-Clause
// node_membership: this node's row in the cluster's nodes table (docs/cluster.md §3): joining, the
// heartbeat that renews its lease, and the sweep that declares the nodes that missed theirs lost.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/result.h"
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
  // its own row lost (the others declared it dead, and its kernels with it); it has re-joined by then.
  NodeMembership(boost::asio::io_context& io, state::Database& db, MembershipOptions options,
                 std::function<state::NodeLoad()> load, std::function<void()> lost);
  // Registers with a new incarnation. kConflict when a live node at another address holds the id.
  common::Result<state::Registration> join();
  // Heartbeats and sweeps every options.heartbeat until stop().
  void start();
  void stop();

  const std::string& id() const { return options_.node_id; }
  int64_t incarnation() const { return incarnation_; }

 private:
  void schedule();
  void beat();

  state::Database& db_;
  MembershipOptions options_;
  std::function<state::NodeLoad()> load_;
  std::function<void()> lost_;
  boost::asio::steady_timer timer_;
  int64_t incarnation_ = 0;
  // Since when every renewal has succeeded; unset after a failure. A node sweeps only after a whole
  // lease of them: after a PostgreSQL outage everyone gets a lease to renew before anyone is swept.
  std::optional<std::chrono::steady_clock::time_point> healthy_since_;
};

// This host's memory (/proc/meminfo: MemTotal, MemAvailable), in bytes; zeros when unreadable.
state::NodeLoad host_memory();

}  // namespace cellgate::gateway
