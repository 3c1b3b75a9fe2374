// SPDX-License-Identifier: BSD-3-Clause
// The kernel manager driven with fake kernels: start and quotas, delete, a kernel that dies, culling,
// pausing, seeds, the warm pool, the fork server's supervision and re-adoption after a restart.
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <optional>

#include <boost/asio/co_spawn.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "gateway/fork_server.h"
#include "gateway/kernel_manager.h"
#include "gateway/seed.h"
#include "state/database.h"
#include "state/kernel_records.h"
#include "tests/unit/gateway/test_gateway.h"

using namespace cellgate;
using namespace cellgate::testing;
using namespace std::chrono_literals;
using gateway::KernelManager;

namespace {

state::User user(const std::string& name, bool admin = false) { return state::User{name, admin, {}, "", false}; }

std::shared_ptr<gateway::KernelHub> start(TestGateway& t, const state::User& u, KernelManager::StartOptions o = {}) {
  auto hub = run(t.io, t.gw->kernels().start(u, std::move(o)));
  REQUIRE(hub.has_value());
  return hub.value();
}

}  // namespace

TEST_CASE("a kernel starts for its owner, is seen by them and admins only, and is removed", "[kernel_manager]") {
  ScratchDir dir;
  FakeSpawner fake;
  TestGateway t(dir, fake);
  auto& km = t.gw->kernels();
  auto hub = start(t, user("alice"));
  const std::string id = hub->kernel().id();
  CHECK(hub->kernel().state() == launcher::KernelState::kIdle);
  CHECK(km.model(*hub)["owner"] == "alice");
  CHECK(km.model(*hub)["workspace"] == "default");
  CHECK(km.find(id, user("alice")) == hub);
  CHECK(km.find(id, user("bob")) == nullptr);
  CHECK(km.find(id, user("root", true)) == hub);
  auto rec = state::get_kernel(t.gw->db(), id);
  REQUIRE(rec.has_value());
  CHECK(rec->owner == "alice");
  CHECK(rec->state == "running");
  // Identity comes from the token, never from the client.
  auto spawned = fake.requests().back();
  CHECK(spawned.env.at("KERNEL_USERNAME") == "alice");
  CHECK(spawned.env.at("KERNEL_ID") == id);

  run(t.io, km.remove(id, "alice"));
  CHECK(km.kernels().empty());
  CHECK(!state::get_kernel(t.gw->db(), id).has_value());
  CHECK(run_until(t.io, [&] { return fake.running() == 0; }));
}

TEST_CASE("quotas: a user's max_kernels and the gateway's", "[kernel_manager]") {
  ScratchDir dir;
  FakeSpawner fake;
  TestGateway t(dir, fake, [](gateway::Config& c) {
    c.max_kernels_per_user = 1;
    c.max_kernels = 2;
  });
  auto& km = t.gw->kernels();
  start(t, user("alice"));
  auto second = run(t.io, km.start(user("alice"), {}));
  REQUIRE(!second.has_value());
  CHECK(second.error().code == common::Errc::kForbidden);
  CHECK(second.error().message == "quota exceeded: max_kernels (1) for user alice");
  start(t, user("bob"));
  auto third = run(t.io, km.start(user("carol"), {}));
  REQUIRE(!third.has_value());
  CHECK(third.error().message == "Resource Limit: max_kernels (2) reached");
}

TEST_CASE("a start that fails leaves nothing behind", "[kernel_manager]") {
  ScratchDir dir;
  FakeSpawner fake;
  TestGateway t(dir, fake);
  auto& km = t.gw->kernels();
  fake.fail_next_spawn();
  auto hub = run(t.io, km.start(user("alice"), {}));
  REQUIRE(!hub.has_value());
  CHECK(hub.error().message == "kernel failed to start: fake spawn failure");
  CHECK(km.kernels().empty());
  CHECK(state::list_kernels(t.gw->db())->empty());
  KernelManager::StartOptions unknown_spec;
  unknown_spec.name = "no-such-spec";
  auto unknown = run(t.io, km.start(user("alice"), unknown_spec));
  REQUIRE(!unknown.has_value());
  CHECK(unknown.error().code == common::Errc::kNotFound);
}

TEST_CASE("a kernel whose process dies is restarted", "[kernel_manager]") {
  ScratchDir dir;
  FakeSpawner fake;
  TestGateway t(dir, fake);
  auto hub = start(t, user("alice"));
  fake.kill_kernel(hub->kernel().id());
  CHECK(run_until(t.io, [&] { return fake.spawns() == 2 && hub->kernel().state() == launcher::KernelState::kIdle; }));
}

TEST_CASE("idle kernels are paused, then culled", "[kernel_manager]") {
  ScratchDir dir;
  FakeSpawner fake;
  TestGateway t(dir, fake, [](gateway::Config& c) {
    c.pause_after_s = 1;
    c.cull_idle_timeout_s = 3;
    c.cull_interval_s = 1;
  });
  auto& km = t.gw->kernels();
  auto hub = start(t, user("alice"));
  CHECK(run_until(t.io, [&] { return hub->kernel().paused(); }, 10s));
  CHECK(fake.frozen() >= 1);
  CHECK(km.model(*hub)["paused"] == true);
  CHECK(run_until(t.io, [&] { return km.kernels().empty(); }, 20s));
}

TEST_CASE("a seed runs on every launch, and one that fails fails the start", "[kernel_manager]") {
  ScratchDir dir;
  FakeSpawner fake;
  TestGateway t(dir, fake);
  const std::string nb = dir.path() + "/seed.ipynb";
  std::ofstream(nb) << nlohmann::json{
      {"nbformat", 4}, {"nbformat_minor", 5},
      {"metadata", {{"kernelspec", {{"name", "fake"}, {"language", "python"}}}}},
      {"cells", {{{"cell_type", "code"}, {"source", "x = 1"}, {"metadata", nlohmann::json::object()}, {"outputs", nlohmann::json::array()}},
                 {{"cell_type", "code"}, {"source", "raise ValueError('bad')"}, {"metadata", nlohmann::json::object()}, {"outputs", nlohmann::json::array()}}}}}
                           .dump();
  auto seed = gateway::load_seed(nb);
  REQUIRE(seed.has_value());
  KernelManager::StartOptions o;
  o.seed = seed.value();
  o.seed_failure = std::make_shared<gateway::SeedFailure>();
  auto hub = run(t.io, t.gw->kernels().start(user("alice"), o));
  REQUIRE(!hub.has_value());
  CHECK_THAT(hub.error().message, Catch::Contains("seed notebook seed.ipynb: cell 2 failed: ValueError"));
  CHECK(o.seed_failure->cell == 1);
  CHECK(t.gw->kernels().kernels().empty());
}

TEST_CASE("the warm pool fills, and a start claims a pooled kernel", "[kernel_manager]") {
  ScratchDir dir;
  FakeSpawner fake;
  TestGateway t(dir, fake, [](gateway::Config& c) {
    c.spawner = "jail";      // the pool is for jailed kernels; the fake spawner stands in
    c.jail_helper = "/bin/true";  // its --attach-workspace "mounts" the workspace
    c.pool = {{"fake", 1}};
  });
  auto& km = t.gw->kernels();
  run(t.io, km.start_services());
  CHECK(run_until(t.io, [&] { return km.pool_status()["fake"]["ready"] == 1; }));
  CHECK(km.kernels().empty());  // a pooled kernel is nobody's
  auto records = state::list_kernels(t.gw->db());
  REQUIRE(records->size() == 1);
  CHECK(records->front().owner == KernelManager::kPoolOwner);
  const int spawned = fake.spawns();
  auto hub = start(t, user("alice"));
  CHECK(fake.spawns() == spawned);  // claimed, not started
  CHECK(hub->owner == "alice");
  CHECK(km.find(hub->kernel().id(), user("alice")) == hub);
  CHECK(state::get_kernel(t.gw->db(), hub->kernel().id())->owner == "alice");
  // The pool refills behind it.
  CHECK(run_until(t.io, [&] { return km.pool_status()["fake"]["ready"] == 1; }));
}

TEST_CASE("kernels outlive the gateway and are re-adopted by the next", "[kernel_manager]") {
  ScratchDir dir;
  FakeSpawner fake;
  std::string id;
  {
    TestGateway first(dir, fake);
    id = start(first, user("alice"))->kernel().id();
  }  // stopped: the kernel keeps running
  CHECK(fake.running() == 1);
  TestGateway second(dir, fake);
  run(second.io, second.gw->kernels().start_services());
  auto hub = second.gw->kernels().find(id, user("alice"));
  REQUIRE(hub);
  CHECK(hub->kernel().state() == launcher::KernelState::kIdle);
  CHECK(fake.spawns() == 1);
  // One that died meanwhile is listed dead, with the reason.
  fake.kill_kernel(id);
  second.gw.reset();
  TestGateway third(dir, fake);
  run(third.io, third.gw->kernels().start_services());
  auto dead = third.gw->kernels().find(id, user("alice"));
  REQUIRE(dead);
  CHECK(dead->kernel().state() == launcher::KernelState::kDead);
  CHECK_THAT(dead->kernel().reason(), Catch::StartsWith("the kernel died while the gateway was down"));
}

TEST_CASE("the fork server is restarted after it dies, and not after it is stopped", "[kernel_manager]") {
  ScratchDir dir;
  const std::string bin = dir.path() + "/zygote";
  std::ofstream(bin) << "#!/bin/sh\nexec sleep 1000\n";
  ::chmod(bin.c_str(), 0755);
  boost::asio::io_context io{1};
  gateway::ForkServer fs(io, bin, dir.path(), 100ms);
  REQUIRE(fs.start());
  const pid_t first = fs.pid();
  CHECK(first > 0);
  ::kill(first, SIGKILL);
  CHECK(run_until(io, [&] { return fs.pid() > 0 && fs.pid() != first; }, 10s));
  fs.stop();
  CHECK(fs.pid() < 0);
  run_for(io, 300ms);
  CHECK(fs.pid() < 0);
}

TEST_CASE("a burst of starts runs at most max_starting spawns at once, each user's within theirs", "[kernel_manager]") {
  ScratchDir dir;
  FakeSpawner fake;
  TestGateway t(dir, fake, [](gateway::Config& c) {
    c.max_starting = 3;
    c.max_starting_per_user = 2;
    c.max_kernels_per_user = 3;  // the starts waiting for their turn count toward it
  });
  auto& km = t.gw->kernels();
  fake.delay_spawns(150ms);  // a slow fork server: every spawn is awaited a while
  std::vector<std::optional<common::Result<std::shared_ptr<gateway::KernelHub>>>> out(9);
  const char* users[] = {"alice", "bob", "carol"};
  for (size_t i = 0; i < out.size(); ++i) {
    boost::asio::co_spawn(
        t.io,
        [&km, &out, i, u = user(users[i % 3])]() -> boost::asio::awaitable<void> {
          KernelManager::StartOptions o;
          auto r = co_await km.start(u, std::move(o));
          out[i].emplace(std::move(r));
        },
        [](std::exception_ptr p) {
          if (p) std::rethrow_exception(p);
        });
  }
  REQUIRE(run_until(t.io, [&] { return std::all_of(out.begin(), out.end(), [](auto& r) { return r.has_value(); }); }));
  for (auto& r : out) CHECK(r->has_value());
  CHECK(fake.most_spawns_waiting() == 3);
  CHECK(km.kernels().size() == 9);
  CHECK(km.starts_status()["in_flight"] == 0);
  // Three each, the quota: a fourth of alice's is refused, not queued.
  auto fourth = run(t.io, km.start(user("alice"), {}));
  REQUIRE(!fourth.has_value());
  CHECK(fourth.error().code == common::Errc::kForbidden);
}

TEST_CASE("restarts take their turn as starts do: a user's restarts in flight stay within their bound", "[kernel_manager]") {
  ScratchDir dir;
  FakeSpawner fake;
  TestGateway t(dir, fake, [](gateway::Config& c) {
    c.max_starting_per_user = 1;
    c.start_queue_per_user = 1;
  });
  auto& km = t.gw->kernels();
  std::vector<std::shared_ptr<gateway::KernelHub>> hubs;
  for (int i = 0; i < 3; ++i) hubs.push_back(start(t, user("alice")));
  auto bobs = start(t, user("bob"));
  fake.delay_spawns(150ms);
  // Three of alice's restarts at once: one runs, one waits its turn, one finds her queue full (429).
  std::vector<std::optional<common::Status>> out(3);
  for (size_t i = 0; i < out.size(); ++i) {
    boost::asio::co_spawn(
        t.io,
        [&km, &out, i, hub = hubs[i]]() -> boost::asio::awaitable<void> {
          auto r = co_await km.restart(hub, "alice");
          out[i].emplace(std::move(r));
        },
        [](std::exception_ptr p) {
          if (p) std::rethrow_exception(p);
        });
  }
  REQUIRE(run_until(t.io, [&] { return std::all_of(out.begin(), out.end(), [](auto& r) { return r.has_value(); }); }));
  CHECK(fake.most_spawns_waiting() == 1);
  int ok = 0, refused = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i]->has_value()) {
      ++ok;
      CHECK(hubs[i]->kernel().state() == launcher::KernelState::kIdle);
    } else {
      ++refused;
      CHECK(out[i]->error().code == common::Errc::kTooManyRequests);
      CHECK(out[i]->error().message.find("start_queue_per_user 1") != std::string::npos);
      CHECK(hubs[i]->kernel().state() == launcher::KernelState::kDead);  // stopped, its relaunch refused
    }
  }
  CHECK(ok == 2);
  CHECK(refused == 1);
  // Another user's restart is not held by alice's, and a refused kernel restarts once it is her turn.
  CHECK(run(t.io, km.restart(bobs, "bob")).has_value());
  for (auto& hub : hubs)
    if (hub->kernel().state() == launcher::KernelState::kDead) CHECK(run(t.io, km.restart(hub, "alice")).has_value());
  CHECK(km.starts_status()["in_flight"] == 0);
}

TEST_CASE("a kernel deleted while its spawn is awaited: the start fails and its process is killed", "[kernel_manager]") {
  ScratchDir dir;
  FakeSpawner fake;
  TestGateway t(dir, fake);
  auto& km = t.gw->kernels();
  fake.delay_spawns(300ms);
  std::optional<common::Result<std::shared_ptr<gateway::KernelHub>>> out;
  boost::asio::co_spawn(
      t.io,
      [&]() -> boost::asio::awaitable<void> {
        // Named: GCC 12 can destroy a temporary in a co_await operand twice.
        const state::User alice = user("alice");
        KernelManager::StartOptions o;
        auto r = co_await km.start(alice, std::move(o));
        out.emplace(std::move(r));
      },
      [](std::exception_ptr p) {
        if (p) std::rethrow_exception(p);
      });
  REQUIRE(run_until(t.io, [&] { return fake.spawns_waiting() == 1 && km.kernels().size() == 1; }));
  const std::string id = km.kernels().begin()->first;
  run(t.io, km.remove(id, "alice"));
  REQUIRE(run_until(t.io, [&] { return out.has_value(); }));
  REQUIRE(!out->has_value());
  CHECK(out->error().code == common::Errc::kUnavailable);
  CHECK(out->error().message == "kernel failed to start: the kernel was stopped while it was starting");
  CHECK(fake.spawns() == 1);
  CHECK(run_until(t.io, [&] { return fake.running() == 0; }));
  CHECK(km.kernels().empty());
  CHECK(state::list_kernels(t.gw->db())->empty());
}
