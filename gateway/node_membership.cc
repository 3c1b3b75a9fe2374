// SPDX-License-Identifier: BSD-3-Clause
// node_membership: this node's row in the nodes table: join, heartbeat, sweep.
#include "gateway/node_membership.h"

#include <fstream>
#include <sstream>

#include <fmt/ranges.h>

#include "common/log.h"
#include "state/database.h"

namespace cellgate::gateway {

NodeMembership::NodeMembership(boost::asio::io_context& io, state::Database& db, MembershipOptions options,
                               std::function<state::NodeLoad()> load, std::function<void()> lost)
    : db_(db),
      options_(std::move(options)),
      load_(std::move(load)),
      lost_(std::move(lost)),
      fence_(std::make_shared<LeaseFence>(options_.lease - 2 * options_.heartbeat)),
      timer_(io) {}

common::Result<state::Registration> NodeMembership::join() {
  state::NodeRow me;
  me.id = options_.node_id;
  me.address = options_.address;
  me.version = options_.version;
  me.load = load_();
  me.state = "up";
  const auto sent = LeaseFence::Clock::now();
  auto r = state::register_node(db_, me, options_.lease.count());
  if (!r) return r.error();
  fence_->renewed(sent);
  incarnation_ = r->incarnation;
  healthy_since_ = std::chrono::steady_clock::now();
  common::log_info("node={} incarnation={} address={} previous=\"{}\" msg=\"joined the cluster\"", me.id,
                   incarnation_, me.address, r->previous_state);
  return r;
}

void NodeMembership::start() { schedule(); }

void NodeMembership::stop() { timer_.cancel(); }

void NodeMembership::schedule() {
  timer_.expires_after(options_.heartbeat);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    beat();
    schedule();
  });
}

void NodeMembership::beat() {
  const auto now = std::chrono::steady_clock::now();
  auto renewed = state::renew_node(db_, options_.node_id, incarnation_, load_());
  if (!renewed) {
    if (healthy_since_)
      common::log_warn("node={} msg=\"cannot renew the node's lease\" error=\"{}\"", options_.node_id,
                       renewed.error().message);
    if (!fence_->holds() && !fence_reported_) {
      fence_reported_ = true;
      common::log_error("node={} msg=\"lease not renewed in time: this node's kernels are not served\"",
                        options_.node_id);
    }
    healthy_since_.reset();
    return;
  }
  if (renewed.value() == state::Renewal::kLost) {
    // The others declared this node lost (it was cut off, or frozen, past the lease): its kernels'
    // rows are dead and their workspaces may be restored elsewhere. Join again as a new incarnation
    // and let the owner end what it still runs of them, acting for none of them meanwhile.
    common::log_error("node={} incarnation={} msg=\"this node was declared lost; rejoining\"", options_.node_id,
                      incarnation_);
    fence_->suspend();
    if (auto j = join(); !j) {
      common::log_error("node={} msg=\"cannot rejoin\" error=\"{}\"", options_.node_id, j.error().message);
      healthy_since_.reset();
      return;
    }
    lost_();
    return;
  }
  fence_->renewed(now);
  fence_reported_ = false;
  if (!healthy_since_) healthy_since_ = now;
  if (now - *healthy_since_ >= options_.lease) sweep();
  if (on_nodes_) {
    if (auto nodes = state::list_nodes(db_)) on_nodes_(nodes.value());
  }
}

void NodeMembership::sweep() {
  auto lost = state::sweep_lost_nodes(db_, options_.lease.count());
  if (!lost) {
    common::log_warn("node={} msg=\"cannot sweep lost nodes\" error=\"{}\"", options_.node_id, lost.error().message);
    return;
  }
  for (const auto& id : lost.value())
    common::log_warn("node={} by={} msg=\"node lost: missed its lease; its kernels are dead\"", id, options_.node_id);
}

state::NodeLoad host_memory() {
  state::NodeLoad l;
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    int64_t kib = 0;
    fields >> key >> kib;
    if (key == "MemTotal:") l.memory_total = kib * 1024;
    if (key == "MemAvailable:") l.memory_free = kib * 1024;
  }
  return l;
}

}  // namespace cellgate::gateway
