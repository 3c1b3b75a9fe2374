// SPDX-License-Identifier: BSD-3-Clause
// warm_pool: warm kernels per kernelspec, started in the background and claimed by POST /api/kernels.
#include "gateway/warm_pool.h"

#include <algorithm>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "common/log.h"
#include "gateway/agent_exec.h"
#include "kernel-launcher/process_runner.h"

namespace cellgate::gateway {

namespace asio = boost::asio;
using launcher::KernelState;
using namespace std::chrono_literals;

namespace {
constexpr auto kCheckInterval = 5s;
constexpr auto kMaxBackoff = 60s;
constexpr auto kWarmTimeout = 10s;
constexpr auto kClaimStepTimeout = 10s;

bool same_rlimits(const launcher::Limits& a, const launcher::Limits& b) {
  return a.nofile == b.nofile && a.fsize_bytes == b.fsize_bytes && a.tmp_bytes == b.tmp_bytes;
}

// The variables a claim sets in the pooled kernel: those that differ from what it started with. Only
// KERNEL_* ones can be applied to a running kernel (os.environ); anything else — PYTHONPATH, LD_PRELOAD,
// OMP_NUM_THREADS, a removed variable — acts at interpreter start, so such a request starts cold.
bool env_delta(const std::map<std::string, std::string>& pooled, const std::map<std::string, std::string>& wanted,
               std::map<std::string, std::string>& delta) {
  for (const auto& [k, v] : pooled)
    if (!wanted.count(k)) return false;
  for (const auto& [k, v] : wanted) {
    auto it = pooled.find(k);
    if (it != pooled.end() && it->second == v) continue;
    if (!k.starts_with("KERNEL_")) return false;
    delta[k] = v;
  }
  return true;
}
}  // namespace

WarmPool::WarmPool(asio::io_context& io, WarmPoolOptions options, std::string jail_helper, Factory make)
    : io_(io), options_(std::move(options)), jail_helper_(std::move(jail_helper)), make_(std::move(make)), check_(io),
      later_(io) {}

void WarmPool::refill_after(std::chrono::milliseconds delay) {
  later_.expires_after(delay);
  later_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) refill();
  });
}

void WarmPool::start() {
  refill();
  schedule_check();
}

void WarmPool::schedule_check() {
  check_.expires_after(kCheckInterval);
  check_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopping_) return;
    // A pooled kernel that died (no auto-restart in the pool) is dropped and replaced.
    for (auto& [spec, q] : ready_) {
      q.erase(std::remove_if(q.begin(), q.end(),
                             [](const auto& h) { return h->kernel().state() != KernelState::kIdle &&
                                                        h->kernel().state() != KernelState::kBusy; }),
              q.end());
    }
    refill();
    schedule_check();
  });
}

std::shared_ptr<KernelHub> WarmPool::take(const std::string& spec) {
  auto it = ready_.find(spec);
  if (it == ready_.end()) return nullptr;
  auto& q = it->second;
  while (!q.empty()) {
    auto hub = std::move(q.front());
    q.pop_front();
    // Busy is fine: a fresh kernel may still be answering the start's extra kernel_info nudges.
    const auto state = hub->kernel().state();
    if (state == KernelState::kIdle || state == KernelState::kBusy) return hub;
    // Dead or restarting: not something to hand out; its shutdown tidies the jail and dirs.
    common::log_warn("kernel={} spec={} msg=\"pooled kernel not running; dropped\" state={}", hub->kernel().id(), spec,
                     launcher::to_string(state));
    asio::co_spawn(io_, hub->kernel().shutdown(), [hub](std::exception_ptr) {});
  }
  return nullptr;
}

void WarmPool::give_back(const std::string& spec, std::shared_ptr<KernelHub> hub) {
  if (stopping_) {
    asio::co_spawn(io_, hub->kernel().shutdown(), [hub](std::exception_ptr) {});
    return;
  }
  ready_[spec].push_front(std::move(hub));
}

uint64_t WarmPool::memory_in_use() const {
  uint64_t total = 0;
  for (const auto& [spec, q] : ready_)
    for (const auto& h : q) total += h->kernel().spawner().memory_usage(h->kernel().process());
  for (const auto& [spec, v] : starting_) total += v.size() * per_kernel_estimate_;
  return total;
}

void WarmPool::refill() {
  if (stopping_) return;
  const auto now = std::chrono::steady_clock::now();
  int in_flight = 0;
  for (const auto& [spec, v] : starting_) in_flight += static_cast<int>(v.size());
  bool progress = true;
  // Round-robin over kernelspecs, one start each per round, so one big pool cannot starve another.
  while (progress && in_flight < options_.concurrency) {
    progress = false;
    for (const auto& [spec, size] : options_.sizes) {
      if (in_flight >= options_.concurrency) break;
      if (auto r = retry_at_.find(spec); r != retry_at_.end() && now < r->second) continue;
      const int have = static_cast<int>(ready_[spec].size() + starting_[spec].size());
      if (have >= size) continue;
      if (options_.max_memory > 0 && memory_in_use() + per_kernel_estimate_ > options_.max_memory) {
        common::log_debug("spec={} msg=\"pool refill waits: memory budget\"", spec);
        return;
      }
      auto hub = make_(spec);
      if (!hub) continue;
      starting_[spec].push_back(hub);
      ++in_flight;
      progress = true;
      asio::co_spawn(io_, fill_one(this, spec, hub), asio::detached);
    }
  }
}

asio::awaitable<void> WarmPool::fill_one(WarmPool* self, std::string spec, std::shared_ptr<KernelHub> hub) {
  auto st = co_await hub->kernel().start();
  auto code = self->options_.code.find(spec);
  if (st && !self->stopping_ && code != self->options_.code.end() && !code->second.warmup.empty()) {
    // First-execute costs (ipykernel's imports: 5-15 ms on a loaded 2-core host) are paid while the
    // kernel is still the pool's, not in its claim. A kernel that fails it is pooled anyway: the
    // claim's own execute finds out and starts cold instead.
    std::string warmup = code->second.warmup;  // named: GCC 12 may destroy a temporary in a co_await operand twice
    auto warm = co_await run_hidden(hub, warmup, kWarmTimeout);
    if (!warm)
      common::log_info("kernel={} spec={} msg=\"pool kernel warm-up failed\" error=\"{}\"", hub->kernel().id(), spec,
                       warm.error().message);
  }
  auto& v = self->starting_[spec];
  v.erase(std::remove(v.begin(), v.end(), hub), v.end());
  if (self->stopping_) {
    co_await hub->kernel().shutdown();
    co_return;
  }
  if (!st) {
    int n = ++self->failures_[spec];
    auto backoff = std::min<std::chrono::seconds>(kMaxBackoff, std::chrono::seconds(1 << std::min(n, 6)));
    self->retry_at_[spec] = std::chrono::steady_clock::now() + backoff;
    common::log_error("spec={} msg=\"pool kernel failed to start\" retry_in_s={} error=\"{}\"", spec, backoff.count(),
                      st.error().message);
    co_await hub->kernel().shutdown();
    co_return;
  }
  self->failures_.erase(spec);
  self->retry_at_.erase(spec);
  const uint64_t used = hub->kernel().spawner().memory_usage(hub->kernel().process());
  if (used > 0) self->per_kernel_estimate_ = std::max<uint64_t>(used, 16ull << 20);
  if (self->on_ready_) self->on_ready_(hub);
  self->ready_[spec].push_back(hub);
  common::log_info("kernel={} spec={} msg=\"pool kernel ready\" ready={}", hub->kernel().id(), spec,
                   self->ready_[spec].size());
  self->refill();
}

asio::awaitable<void> WarmPool::stop() {
  stopping_ = true;
  check_.cancel();
  later_.cancel();
  std::vector<std::shared_ptr<KernelHub>> all;
  for (auto& [spec, q] : ready_) all.insert(all.end(), q.begin(), q.end());
  ready_.clear();
  // Kernels still starting too: the io loop ends after this, so fill_one may never resume.
  for (auto& [spec, v] : starting_) all.insert(all.end(), v.begin(), v.end());
  for (auto& hub : all) co_await hub->kernel().shutdown();
}

asio::awaitable<std::shared_ptr<KernelHub>> WarmPool::claim(launcher::KernelOptions cold, std::string owner) {
  const std::string spec = cold.spec.name;
  auto hub = take(spec);
  if (!hub) co_return nullptr;
  auto& kernel = hub->kernel();
  const std::string id = kernel.id();
  const launcher::KernelOptions& pooled = kernel.options();
  auto env = cold.env;
  env["KERNEL_ID"] = id;
  std::map<std::string, std::string> delta;
  if (cold.policy_file != pooled.policy_file || cold.transport != pooled.transport || cold.spec.argv != pooled.spec.argv ||
      !same_rlimits(cold.limits, pooled.limits) || !env_delta(pooled.env, env, delta)) {
    common::log_info("kernel={} msg=\"request does not fit a pooled kernel; starting cold\"", id);
    give_back(spec, hub);
    co_return nullptr;
  }
  // From here the kernel is this owner's or nobody's: on any failure it is shut down, never pooled again.
  auto fail = [&](const std::string& why) {
    common::log_error("kernel={} owner={} msg=\"claim failed; starting cold\" error=\"{}\"", id, owner, why);
    asio::co_spawn(io_, kernel.shutdown(), [hub](std::exception_ptr) {});
    refill();
  };
  launcher::ProcessRun mount;
  mount.argv = {jail_helper_, "--attach-workspace", kernel.process().status_file, "--workspace", cold.workspace_dir};
  mount.env = {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}};
  mount.cwd = "/";
  mount.timeout = kClaimStepTimeout;
  auto mounted = co_await launcher::run_process(std::move(mount));
  if (!mounted || mounted->exit_code != 0) {
    fail(mounted ? "attach workspace: " + mounted->stderr_data : mounted.error().message);
    co_return nullptr;
  }
  const auto& want = cold.limits;
  if (want.memory_bytes != pooled.limits.memory_bytes || want.pids != pooled.limits.pids || want.cpus != pooled.limits.cpus) {
    if (auto st = kernel.spawner().set_limits(kernel.process(), want); !st) {
      fail("limits: " + st.error().message);
      co_return nullptr;
    }
  }
  // The kernel's cwd is still the placeholder under the new mount: its claim code enters the workspace.
  auto claim_code = options_.code.find(spec);
  if (claim_code == options_.code.end()) {
    fail("no claim code for kernelspec " + spec);
    co_return nullptr;
  }
  const std::string code = claim_cell(claim_code->second, delta);
  auto applied = co_await run_hidden(hub, code, kClaimStepTimeout);
  if (!applied) {
    fail("claim code: " + applied.error().message);
    co_return nullptr;
  }
  kernel.retarget(cold.workspace_dir, env, cold.limits);
  refill_after(std::chrono::seconds(1));
  co_return hub;
}

nlohmann::json WarmPool::status() const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [spec, size] : options_.sizes) {
    auto r = ready_.find(spec);
    auto s = starting_.find(spec);
    out[spec] = {{"size", size},
                 {"ready", r == ready_.end() ? 0 : r->second.size()},
                 {"starting", s == starting_.end() ? 0 : s->second.size()}};
  }
  return out;
}

}  // namespace cellgate::gateway
