// SPDX-License-Identifier: BSD-3-Clause
// test_gateway: a whole gateway (its services, no listener) on a scratch data dir, with fake kernels
// (fake_spawner.h), and a loop that runs its io context until a coroutine is done.
#pragma once

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include "gateway/config.h"
#include "gateway/gateway.h"
#include "tests/unit/gateway/fake_spawner.h"
#include "tests/unit/gateway/scratch_dir.h"

namespace cellgate::testing {

// Forwards to a FakeSpawner the test keeps: its kernels outlive one gateway (re-adoption).
class SpawnerRef : public launcher::Spawner {
 public:
  explicit SpawnerRef(FakeSpawner& fake) : fake_(fake) {}
  const char* name() const override { return fake_.name(); }
  boost::asio::awaitable<common::Result<launcher::ProcessHandle>> spawn(const launcher::SpawnRequest& r) override {
    co_return co_await fake_.spawn(r);
  }
  void signal(const launcher::ProcessHandle& p, launcher::KernelSignal s) override { fake_.signal(p, s); }
  std::string exit_reason(const launcher::ProcessHandle& p, int status) override { return fake_.exit_reason(p, status); }
  common::Status freeze(const launcher::ProcessHandle& p, bool frozen, launcher::Freezer kind) override {
    return fake_.freeze(p, frozen, kind);
  }
  common::Status set_limits(const launcher::ProcessHandle& p, const launcher::Limits& l) override {
    return fake_.set_limits(p, l);
  }
  uint64_t memory_usage(const launcher::ProcessHandle& p) override { return fake_.memory_usage(p); }

 private:
  FakeSpawner& fake_;
};

// The config of a test gateway: fake kernels ("fake", the default), plain spawner, no fork server.
inline gateway::Config test_config(const std::string& dir) {
  gateway::Config c;
  c.data_dir = dir + "/data";
  c.runtime_dir = dir + "/run";
  c.ipc_tmpfs = "off";
  c.workspace_volume = "off";  // fake kernels need no live quota; tests/unit/workspace/volume_test.cc has the volume
  c.kernelspec_dirs = {dir + "/kernels"};
  c.default_kernel = "fake";
  c.spawner = "plain";
  c.fork_server = false;
  c.token = "test-token";
  c.kernel_read_budget = 1ull << 30;
  c.kernel_start_timeout_s = 30;
  c.shutdown_grace_ms = 1000;
  write_fake_kernelspec(dir + "/kernels", "fake");
  return c;
}

// Runs the io context until the awaitable is done (a timeout throws, failing the test).
template <class T>
T run(boost::asio::io_context& io, boost::asio::awaitable<T> a,
      std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  std::optional<std::conditional_t<std::is_void_v<T>, bool, T>> out;
  std::exception_ptr error;
  bool done = false;
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        if constexpr (std::is_void_v<T>) {
          co_await std::move(a);
          out.emplace(true);
        } else {
          out.emplace(co_await std::move(a));
        }
      },
      [&](std::exception_ptr e) {
        error = e;
        done = true;
      });
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (!done) {
    if (std::chrono::steady_clock::now() > until) throw std::runtime_error("test coroutine timed out");
    io.restart();
    io.run_one_for(std::chrono::milliseconds(10));
  }
  if (error) std::rethrow_exception(error);
  if constexpr (!std::is_void_v<T>) return std::move(*out);
}

// Runs the io context for a while (timers, kernels' messages).
inline void run_for(boost::asio::io_context& io, std::chrono::milliseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
    io.restart();
    io.run_one_for(std::chrono::milliseconds(10));
  }
}

// Runs the io context until pred holds (false after timeout).
inline bool run_until(boost::asio::io_context& io, const std::function<bool()>& pred,
                      std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) return false;
    io.restart();
    io.run_one_for(std::chrono::milliseconds(10));
  }
  return true;
}

// A gateway on a scratch dir; configure adjusts the config before it is built.
struct TestGateway {
  explicit TestGateway(ScratchDir& dir, FakeSpawner& fake,
                       const std::function<void(gateway::Config&)>& configure = {}) {
    gateway::Config c = test_config(dir.path());
    if (configure) configure(c);
    gw = std::make_unique<gateway::Gateway>(io, c, std::make_unique<SpawnerRef>(fake));
  }
  ~TestGateway() {
    if (gw) run(io, gw->stop());
  }
  boost::asio::io_context io{1};
  std::unique_ptr<gateway::Gateway> gw;
};

}  // namespace cellgate::testing
