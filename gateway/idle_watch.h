// SPDX-License-Identifier: BSD-3-Clause
// idle_watch: what happens to kernels nobody uses: past --pause-after (or their kernelspec's) they are
// frozen, memory kept; past --cull-idle-timeout they are shut down, their workspace kept.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "gateway/kernel_hub.h"

namespace cellgate::gateway {

struct IdleOptions {
  int cull_idle_timeout_s = 0;  // 0 = never cull
  int cull_interval_s = 60;
  bool cull_busy = false;
  bool cull_connected = false;
  int pause_after_s = 0;        // the default; each kernel has its own (KernelHub::pause_after_s)
};

// Io thread only. Looks at the kernels on timers; cull(id) shuts one down (the watch only decides).
class IdleWatch {
 public:
  using Kernels = std::map<std::string, std::shared_ptr<KernelHub>>;
  IdleWatch(boost::asio::io_context& io, IdleOptions options, const Kernels& kernels,
            std::function<void(const std::string& id)> cull);
  // Starts both timers (culling only when a timeout is set).
  void start();
  void stop();

 private:
  void schedule_cull();
  void schedule_pause();

  IdleOptions options_;
  const Kernels& kernels_;
  std::function<void(const std::string&)> cull_;
  boost::asio::steady_timer cull_timer_;
  boost::asio::steady_timer pause_timer_;
};

}  // namespace cellgate::gateway
