// SPDX-License-Identifier: BSD-3-Clause
// lease_fence: whether this cluster node may still act for its kernels (docs/cluster.md §3). A node
// that cannot renew its lease stops serving its kernels before the others may declare it lost, so that
// two nodes never both act for one kernel.
#pragma once

#include <chrono>

namespace cellgate::gateway {

// Io thread only. Times are this node's steady clock; the others judge the lease by the database's
// clock from the heartbeat the renewal wrote, which is never earlier than when the renewal was sent.
class LeaseFence {
 public:
  using Clock = std::chrono::steady_clock;
  // limit: how long after sending its last successful renewal the node still acts; less than the lease
  // by a margin that covers the sweepers' own delays (NodeMembership uses lease − 2 heartbeats).
  explicit LeaseFence(std::chrono::milliseconds limit) : limit_(limit), renewed_(Clock::now()) {}

  // A renewal (or a join) sent at sent succeeded.
  void renewed(Clock::time_point sent) {
    if (sent > renewed_) renewed_ = sent;
  }
  // While this node, declared lost, ends the kernels the others declared dead: it acts for none.
  void suspend() { suspended_ = true; }
  void resume() { suspended_ = false; }

  bool holds() const { return !suspended_ && Clock::now() - renewed_ < limit_; }

 private:
  std::chrono::milliseconds limit_;
  Clock::time_point renewed_;
  bool suspended_ = false;
};

}  // namespace cellgate::gateway
