// SPDX-License-Identifier: BSD-3-Clause
// fake_spawner: a launcher::Spawner whose kernels are a thread of the test speaking the Jupyter
// protocol over libzmq, and a `sleep` standing for the kernel's process: the gateway's kernel code
// runs for real (connection files, ZMTP, signatures, heartbeats, pidfds) without a real kernel.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "kernel-launcher/spawner.h"

namespace cellgate::testing {

class FakeKernel;

// Thread-safe. Kernels are started from the kernelspec write_fake_kernelspec writes.
class FakeSpawner : public launcher::Spawner {
 public:
  FakeSpawner();
  ~FakeSpawner() override;

  const char* name() const override { return "fake"; }
  // Spawns, then answers after the spawn delay (awaited on the caller's executor, as the fork server's
  // answer is).
  boost::asio::awaitable<common::Result<launcher::ProcessHandle>> spawn(const launcher::SpawnRequest& request) override;
  common::Result<launcher::ProcessHandle> spawn_now(const launcher::SpawnRequest& request);
  void signal(const launcher::ProcessHandle& process, launcher::KernelSignal sig) override;
  std::string exit_reason(const launcher::ProcessHandle&, int) override { return ""; }
  common::Status freeze(const launcher::ProcessHandle& process, bool frozen, launcher::Freezer kind) override;
  common::Status set_limits(const launcher::ProcessHandle& process, const launcher::Limits& limits) override;
  uint64_t memory_usage(const launcher::ProcessHandle&) override { return 32ull << 20; }

  // What was asked of it, in order.
  std::vector<launcher::SpawnRequest> requests() const;
  int spawns() const { return spawns_; }
  int frozen() const { return frozen_; }  // freeze(true) calls
  int thawed() const { return thawed_; }  // freeze(false) calls
  // The next spawn fails (as a jail that cannot be set up).
  void fail_next_spawn() { fail_next_ = true; }
  // Every spawn from now on takes this long to answer (a slow fork server); 0 = at once.
  void delay_spawns(std::chrono::milliseconds delay) { delay_ms_ = delay.count(); }
  // Spawns being awaited now, and the most at once so far.
  int spawns_waiting() const { return waiting_; }
  int most_spawns_waiting() const { return most_waiting_; }
  // Kills a kernel's process, as the OOM killer would: the gateway sees it die.
  void kill_kernel(const std::string& kernel_id);
  // Fake kernels whose thread still runs.
  size_t running() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<FakeKernel>> kernels_;  // by kernel id
  std::vector<launcher::SpawnRequest> requests_;
  std::atomic<int> spawns_{0}, frozen_{0}, thawed_{0};
  std::atomic<bool> fail_next_{false};
  std::atomic<long> delay_ms_{0};
  std::atomic<int> waiting_{0}, most_waiting_{0};
};

// Writes <dir>/<name>/kernel.json for fake kernels (language python). A fake kernel answers
// execute_request with its code on stdout and status ok, unless the code contains "raise": then an
// error (ename ValueError, evalue the code).
void write_fake_kernelspec(const std::string& dir, const std::string& name = "fake");

}  // namespace cellgate::testing
