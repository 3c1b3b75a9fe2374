// SPDX-License-Identifier: BSD-3-Clause
// node_membership: this node's row in the nodes table: join, heartbeat, sweep, fence.
#include "gateway/node_membership.h"

#include <fstream>
#include <sstream>

#include <boost/asio/post.hpp>
#include <fmt/ranges.h>

#include "common/log.h"

namespace cellgate::gateway {

namespace asio = boost::asio;

NodeMembership::NodeMembership(asio::io_context& io, state::Database& db, Connect connect, MembershipOptions options,
                               std::function<state::NodeLoad()> load, std::function<void()> lost,
                               std::function<void(bool)> fenced)
    : io_(io),
      db_(db),
      connect_(std::move(connect)),
      options_(std::move(options)),
      load_(std::move(load)),
      lost_(std::move(lost)),
      fenced_(std::move(fenced)),
      fence_(std::make_shared<LeaseFence>(options_.lease - 2 * options_.heartbeat)),
      watch_(io) {
  load_now_ = load_();
}

NodeMembership::~NodeMembership() {
  stop();
  alive_.reset();
}

template <typename F>
void NodeMembership::to_io(F fn) {
  asio::post(io_, [alive = std::weak_ptr<int>(alive_), fn = std::move(fn)]() mutable {
    if (alive.lock()) fn();
  });
}

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
  common::log_info("node={} incarnation={} address={} previous=\"{}\" msg=\"joined the cluster\"", me.id,
                   r->incarnation, me.address, r->previous_state);
  return r;
}

void NodeMembership::start() {
  healthy_since_ = std::chrono::steady_clock::now();  // join() has just renewed
  thread_ = std::thread([this] { heartbeat_loop(); });
  schedule_watch();
}

void NodeMembership::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  // At most one statement's deadline: the heartbeat thread is never blocked longer.
  if (thread_.joinable()) thread_.join();
  watch_.cancel();
}

void NodeMembership::schedule_watch() {
  watch_.expires_after(std::min<std::chrono::milliseconds>(options_.heartbeat / 4, std::chrono::milliseconds(500)));
  watch_.async_wait([this, alive = std::weak_ptr<int>(alive_)](const boost::system::error_code& ec) {
    if (ec || !alive.lock()) return;
    {
      std::lock_guard lock(mutex_);
      load_now_ = load_();
    }
    const bool down = !fence_->holds();
    if (down != fence_down_) {
      fence_down_ = down;
      if (down)
        common::log_error("node={} msg=\"lease not renewed in time: this node's kernels are frozen and not served\"",
                          options_.node_id);
      else
        common::log_info("node={} msg=\"lease renewed: this node serves its kernels again\"", options_.node_id);
      if (fenced_) fenced_(down);
    }
    schedule_watch();
  });
}

void NodeMembership::heartbeat_loop() {
  bool reported = false;
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, options_.heartbeat, [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    if (!own_db_) {
      if (auto db = connect_(); db) {
        own_db_.emplace(std::move(db.value()));
        reported = false;
      } else if (!reported) {
        reported = true;
        common::log_warn("node={} msg=\"cannot open the heartbeat's database connection\" error=\"{}\"",
                         options_.node_id, db.error().message);
      }
    }
    if (own_db_) beat();
    lock.lock();
  }
}

void NodeMembership::beat() {
  const auto sent = LeaseFence::Clock::now();
  state::NodeLoad load;
  {
    std::lock_guard lock(mutex_);
    load = load_now_;
  }
  auto renewed = state::renew_node(*own_db_, options_.node_id, incarnation_, load);
  if (!renewed) {
    if (healthy_since_)
      common::log_warn("node={} msg=\"cannot renew the node's lease\" error=\"{}\"", options_.node_id,
                       renewed.error().message);
    healthy_since_.reset();
    return;
  }
  if (renewed.value() == state::Renewal::kLost) {
    // The others declared this node lost (it was cut off, or frozen, past the lease): its kernels'
    // rows are dead and their workspaces may be restored elsewhere. Join again as a new incarnation
    // and let the owner end what it still runs of them, acting for none of them meanwhile.
    common::log_error("node={} incarnation={} msg=\"this node was declared lost; rejoining\"", options_.node_id,
                      incarnation_.load());
    to_io([this] { fence_->suspend(); });
    if (auto st = rejoin(); !st) {
      common::log_error("node={} msg=\"cannot rejoin\" error=\"{}\"", options_.node_id, st.error().message);
      healthy_since_.reset();
      return;
    }
    to_io([this] { lost_(); });
    return;
  }
  to_io([this, sent] { fence_->renewed(sent); });
  if (!healthy_since_) healthy_since_ = sent;
  if (sent - *healthy_since_ >= options_.lease) sweep();
  if (wants_nodes_) {
    if (auto nodes = state::list_nodes(*own_db_))
      to_io([this, nodes = std::move(nodes.value())] {
        if (on_nodes_) on_nodes_(nodes);
      });
  }
}

common::Status NodeMembership::rejoin() {
  state::NodeRow me;
  me.id = options_.node_id;
  me.address = options_.address;
  me.version = options_.version;
  {
    std::lock_guard lock(mutex_);
    me.load = load_now_;
  }
  me.state = "up";
  const auto sent = LeaseFence::Clock::now();
  auto r = state::register_node(*own_db_, me, options_.lease.count());
  if (!r) return r.error();
  incarnation_ = r->incarnation;
  healthy_since_ = sent;
  to_io([this, sent] { fence_->renewed(sent); });
  common::log_info("node={} incarnation={} address={} previous=\"{}\" msg=\"joined the cluster\"", me.id,
                   r->incarnation, me.address, r->previous_state);
  return common::ok();
}

void NodeMembership::sweep() {
  auto lost = state::sweep_lost_nodes(*own_db_, options_.lease.count());
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
