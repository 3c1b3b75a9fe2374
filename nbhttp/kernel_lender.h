// SPDX-License-Identifier: BSD-3-Clause
// kernel_lender: notebook-http's kernels: a fixed number, each lent to one request at a time. Dead
// kernels are replaced; waiting for a kernel is bounded in time and in number of waiters.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/result.h"
#include "gateway/kernel_manager.h"

namespace cellgate::nbhttp {

using gateway::KernelHub;

// Io thread only.
class KernelLender {
 public:
  // Kernels are started by kernels with `start` (its seed, kernelspec, workspace) for user.
  KernelLender(boost::asio::io_context& io, gateway::KernelManager& kernels, state::User user,
               gateway::KernelManager::StartOptions start, int size, int max_waiters);

  // Starts every kernel; the first failure (e.g. a failing seed) is returned and the others are stopped.
  boost::asio::awaitable<common::Status> start();
  // A live kernel nobody else is using, or an error: kUnavailable when too many wait, kTimeout at deadline.
  boost::asio::awaitable<common::Result<std::shared_ptr<KernelHub>>> acquire(std::chrono::steady_clock::time_point deadline);
  // Gives the kernel back; a dead one is replaced.
  void release(const std::shared_ptr<KernelHub>& hub);
  // Shuts every kernel down.
  boost::asio::awaitable<void> stop();

 private:
  struct Slot {
    std::shared_ptr<KernelHub> hub;  // null while (re)starting
    bool busy = false;
    bool replacing = false;
  };
  static boost::asio::awaitable<void> replace(KernelLender* self, size_t index);
  void replace_dead();
  void wake_one();

  boost::asio::io_context& io_;
  gateway::KernelManager& kernels_;
  state::User user_;
  gateway::KernelManager::StartOptions start_;
  int max_waiters_;
  bool stopped_ = false;
  std::vector<Slot> slots_;
  std::deque<std::shared_ptr<boost::asio::steady_timer>> waiters_;
};

}  // namespace cellgate::nbhttp
