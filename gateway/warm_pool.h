// SPDX-License-Identifier: BSD-3-Clause
// warm_pool: warm kernels per kernelspec, started in the background and handed out by POST /api/kernels:
// a claim mounts the owner's workspace into the running jail and applies their limits, env and cwd.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include "gateway/kernel_hub.h"
#include "gateway/pool_claim.h"
#include "kernel-launcher/kernel_options.h"

namespace cellgate::gateway {

struct WarmPoolOptions {
  std::map<std::string, int> sizes;  // kernelspec → kernels kept ready
  std::map<std::string, ClaimCode> code;  // kernelspec → its claim and warm-up code (one per size)
  uint64_t max_memory = 0;           // what the ready kernels may hold together (cgroup usage); 0 = no cap
  int concurrency = 1;               // starts in flight at once: the refill's CPU budget
};

// Io thread only. A pooled kernel belongs to nobody: it is not listed, counts in no quota, has no
// workspace (its /workspace is an empty tmpfs) and runs no user code before it is claimed. A claim
// removes it, so a kernel is handed out once, to one owner.
class WarmPool {
 public:
  // make(spec) builds an unstarted, unlisted kernel for kernelspec spec.
  using Factory = std::function<std::shared_ptr<KernelHub>(const std::string& spec)>;
  // jail_helper: the cellgate-jail binary, whose --attach-workspace mounts a claimer's workspace.
  WarmPool(boost::asio::io_context& io, WarmPoolOptions options, std::string jail_helper, Factory make);

  // Called for each kernel once it has started and answered (to record it: a gateway that crashes
  // must find its pool's jails at the next start, or they would run forever).
  void set_on_ready(std::function<void(const std::shared_ptr<KernelHub>&)> on_ready) { on_ready_ = std::move(on_ready); }
  // Starts filling, and a periodic check that drops dead kernels and refills.
  void start();
  // A ready kernel of cold.spec made owner's, as a cold start with options cold would be: their
  // workspace mounted at /workspace (cellgate-jail --attach-workspace), their limits written to its
  // cgroup, the KERNEL_* variables set and the cwd entered by the kernelspec's claim code, run as a
  // hidden cell (a failure fails the claim in any language). Null when none is
  // ready, or the request does not fit a pooled kernel (other variables, program, policy or
  // rlimits): the caller then starts cold. A kernel whose claim failed half-way is shut down.
  boost::asio::awaitable<std::shared_ptr<KernelHub>> claim(launcher::KernelOptions cold, std::string owner);
  // Tops every kernelspec up to its size, within the concurrency and memory budgets.
  void refill();
  // refill() after a moment: a claim's new owner sends their first requests while the host's CPUs
  // are not busy starting its replacement.
  void refill_after(std::chrono::milliseconds delay);
  // Shuts every pooled kernel down (the gateway is stopping: nobody owns them).
  boost::asio::awaitable<void> stop();
  // {spec: {"ready", "starting", "size"}} for /api/status.
  nlohmann::json status() const;

 private:
  // A ready (idle, answering) kernel of that kernelspec, no longer in the pool; null when none.
  std::shared_ptr<KernelHub> take(const std::string& spec);
  // A kernel taken but not handed out (the request did not fit it), back at the front of the queue.
  void give_back(const std::string& spec, std::shared_ptr<KernelHub> hub);
  static boost::asio::awaitable<void> fill_one(WarmPool* self, std::string spec, std::shared_ptr<KernelHub> hub);
  uint64_t memory_in_use() const;
  void schedule_check();

  boost::asio::io_context& io_;
  WarmPoolOptions options_;
  std::string jail_helper_;
  Factory make_;
  std::function<void(const std::shared_ptr<KernelHub>&)> on_ready_;
  std::map<std::string, std::deque<std::shared_ptr<KernelHub>>> ready_;
  std::map<std::string, std::vector<std::shared_ptr<KernelHub>>> starting_;
  std::map<std::string, int> failures_;  // consecutive failed starts: backoff, not a busy loop
  std::map<std::string, std::chrono::steady_clock::time_point> retry_at_;
  uint64_t per_kernel_estimate_ = 128ull << 20;  // updated from what ready kernels actually use
  boost::asio::steady_timer check_;
  boost::asio::steady_timer later_;
  bool stopping_ = false;
};

}  // namespace cellgate::gateway
