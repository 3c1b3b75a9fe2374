// SPDX-License-Identifier: BSD-3-Clause
// node_membership: this node's row in the cluster's nodes table (docs/cluster.md §3): joining, the
// heartbeat that renews its lease, the sweep that declares the nodes that missed theirs lost, and the
// fence that stops this node acting for its kernels when it cannot renew.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/result.h"
#include "gateway/lease_fence.h"
#include "state/database.h"
#include "state/node_records.h"

namespace cellgate::gateway {

struct MembershipOptions {
  std::string node_id;
  std::string address;  // the internal listener other nodes dial, host:port
  std::string version;
  std::chrono::milliseconds lease{10000};
  std::chrono::milliseconds heartbeat{2000};
};

// Every time is the database server's: node clocks never matter. The heartbeat runs on a thread of its
// own with a connection of its own: a database that stops answering holds that thread for a statement's
// deadline, never the io thread, so the fence goes down on time and the kernels' traffic keeps moving
// until it does. Public methods and the callbacks: the io thread.
class NodeMembership {
 public:
  using Connect = std::function<common::Result<state::Database>()>;
  // db: the io thread's connection (join at start). connect: the heartbeat thread's. load: what the node
  // reports (memory, kernels), read on the io thread every heartbeat. lost: this node found its own row
  // lost (the others declared it dead, and its kernels with it); it has re-joined by then, and its fence
  // is suspended until lost resumes it. fenced: the fence went down (true) or up again (false).
  NodeMembership(boost::asio::io_context& io, state::Database& db, Connect connect, MembershipOptions options,
                 std::function<state::NodeLoad()> load, std::function<void()> lost,
                 std::function<void(bool)> fenced = {});
  ~NodeMembership();
  // Registers with a new incarnation. kConflict when a live node at another address holds the id.
  common::Result<state::Registration> join();
  // Starts the heartbeat thread (it connects, and connects again, by itself) and the fence watch.
  void start();
  void stop();

  // Called after every renewal with the cluster's nodes as the database has them (a relay to a node
  // declared lost tells its client the kernel is dead). One observer; null removes it.
  void on_nodes(std::function<void(const std::vector<state::NodeRow>&)> fn) {
    wants_nodes_ = static_cast<bool>(fn);
    on_nodes_ = std::move(fn);
  }

  // Holds while the last successful renewal was sent less than lease − 2 heartbeats ago (a sweeper
  // renews, reads the nodes and sweeps within its own heartbeat), and not while this node, found lost,
  // ends the kernels declared dead (the lost callback resumes it).
  const std::shared_ptr<LeaseFence>& fence() const { return fence_; }

  const std::string& id() const { return options_.node_id; }
  int64_t incarnation() const { return incarnation_; }

 private:
  void heartbeat_loop();           // the heartbeat thread
  void beat();                     // the heartbeat thread
  void sweep();                    // the heartbeat thread
  common::Status rejoin();         // the heartbeat thread
  template <typename F>
  void to_io(F fn);                // runs fn on the io thread, unless this object is gone by then
  void schedule_watch();           // io: the load it reports, and the fence's transitions

  boost::asio::io_context& io_;
  state::Database& db_;
  Connect connect_;
  MembershipOptions options_;
  std::function<state::NodeLoad()> load_;
  std::function<void()> lost_;
  std::function<void(bool)> fenced_;
  std::function<void(const std::vector<state::NodeRow>&)> on_nodes_;
  std::shared_ptr<LeaseFence> fence_;
  bool fence_down_ = false;  // io: the fence was last seen down (its transition is reported once)
  boost::asio::steady_timer watch_;
  std::atomic<int64_t> incarnation_{0};
  std::atomic<bool> wants_nodes_{false};
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);  // what to_io's handlers check

  // The heartbeat thread's.
  std::optional<state::Database> own_db_;
  std::thread thread_;
  // Since when every renewal has succeeded; unset after a failure. A node sweeps only after a whole
  // lease of them: after a PostgreSQL outage everyone gets a lease to renew before anyone is swept.
  std::optional<std::chrono::steady_clock::time_point> healthy_since_;

  std::mutex mutex_;  // guards what follows, shared by both threads
  std::condition_variable wake_;
  bool stopping_ = false;
  state::NodeLoad load_now_;  // refreshed by the io thread, sent by the heartbeat thread
};

// This host's memory (/proc/meminfo: MemTotal, MemAvailable), in bytes; zeros when unreadable.
state::NodeLoad host_memory();

}  // namespace cellgate::gateway
