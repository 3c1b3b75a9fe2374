// SPDX-License-Identifier: BSD-3-Clause
// notebook_http_pool: a fixed number of kernels, each lent to one request at a time (notebook-http). Dead
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
#include "gateway/gateway.h"

namespace cellgate::gateway {

// Io thread only.
class NotebookKernelPool {
 public:
  // Kernels are started with `start` (its seed, kernelspec, workspace) on behalf of `caller`.
  NotebookKernelPool(Gateway& gw, Caller caller, Gateway::StartOptions start, int size, int max_waiters);

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
  static boost::asio::awaitable<void> replace(NotebookKernelPool* self, size_t index);
  void replace_dead();
  void wake_one();

  Gateway& gw_;
  Caller caller_;
  Gateway::StartOptions start_;
  int max_waiters_;
  bool stopped_ = false;
  std::vector<Slot> slots_;
  std::deque<std::shared_ptr<boost::asio::steady_timer>> waiters_;
};

}  // namespace cellgate::gateway
