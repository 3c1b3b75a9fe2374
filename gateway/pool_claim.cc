// SPDX-License-Identifier: BSD-3-Clause
// pool_claim: pool kernels, and handing one to its owner (workspace, limits, env, cwd).
#include <boost/asio/co_spawn.hpp>
#include <fmt/core.h>

#include "common/log.h"
#include "common/random.h"
#include "gateway/agent_exec.h"
#include "gateway/gateway.h"
#include "kernel-launcher/kernel_env.h"
#include "kernel-launcher/process_runner.h"
#include "state/kernel_records.h"

namespace cellgate::gateway {

namespace asio = boost::asio;
using asio::awaitable;
using nlohmann::json;

namespace {

constexpr auto kClaimStepTimeout = std::chrono::seconds(10);

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

void Gateway::start_pool() {
  if (config_.pool.empty()) return;
  if (config_.spawner != "jail")
    throw ConfigError("--pool needs --spawner jail (a claim mounts the owner's workspace into the kernel's jail)");
  auto specs = kernelspecs();
  for (const auto& [name, n] : config_.pool) {
    auto s = specs.find(name);
    if (s == specs.end()) throw ConfigError("--pool: no kernelspec named " + name);
    // A claim sets the owner's env and cwd with a silent Python execute.
    if (s->second.language != "python") throw ConfigError("--pool: " + name + " is not a Python kernel");
  }
  PoolOptions po{config_.pool, config_.pool_max_memory, config_.pool_concurrency};
  kernel_pool_ = std::make_unique<KernelPool>(io_, po, [this](const std::string& spec) { return make_pool_kernel(spec); });
  // Recorded as nobody's: start_services() shuts down whatever a crashed gateway left in its pool.
  kernel_pool_->set_on_ready([this](const std::shared_ptr<KernelHub>& hub) {
    auto& k = hub->kernel();
    state::KernelRecord rec{k.id(), kPoolOwner, k.options().spec.name, "", k.options().runtime_dir,
                            k.process().pid, k.process().status_file, common::iso8601_now(), "pool"};
    if (auto st = state::insert_kernel(*db_, rec); !st)
      common::log_error("kernel={} msg=\"cannot record pool kernel\" error=\"{}\"", k.id(), st.error().message);
  });
}

std::shared_ptr<KernelHub> Gateway::make_pool_kernel(const std::string& name) {
  auto specs = kernelspecs();
  auto spec = specs.find(name);
  if (spec == specs.end()) {
    common::log_error("spec={} msg=\"pool kernelspec is gone\"", name);
    return nullptr;
  }
  launcher::KernelOptions ko;
  ko.kernel_id = common::random_uuid();
  ko.spec = spec->second;
  ko.runtime_dir = config_.runtime_dir + "/k/" + ko.kernel_id;
  ko.private_dir = config_.runtime_dir + "/s/" + ko.kernel_id;
  // No workspace_dir: the jail's /workspace is an empty tmpfs until a claim mounts the owner's.
  ko.env = launcher::build_kernel_env(ko.spec, {}, {{"KERNEL_ID", ko.kernel_id}, {"IPYTHONDIR", "/tmp/.ipython"}});
  apply_kernelspec_policy(ko);
  ko.auto_restart = false;  // a pooled kernel that dies is replaced, not restarted
  return make_hub(std::move(ko), "", "", nullptr, false);
}

awaitable<std::shared_ptr<KernelHub>> Gateway::claim_pooled(Caller caller, launcher::KernelOptions cold,
                                                          std::string ws_name, bool ephemeral) {
  const std::string spec = cold.spec.name;
  auto hub = kernel_pool_->take(spec);
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
    kernel_pool_->give_back(spec, hub);
    co_return nullptr;
  }
  const state::User& user = caller.user;
  // From here the kernel is this caller's or nobody's: on any failure it is shut down, never pooled again.
  ++starting_[user.name];
  auto fail = [&](const std::string& why) {
    --starting_[user.name];
    common::log_error("kernel={} owner={} msg=\"claim failed; starting cold\" error=\"{}\"", id, user.name, why);
    asio::co_spawn(io_, kernel.shutdown(), [hub](std::exception_ptr) {});
    kernel_pool_->refill();
  };
  launcher::ProcessRun mount;
  mount.argv = {config_.jail_helper, "--attach-workspace", kernel.process().status_file, "--workspace", cold.workspace_dir};
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
  hub->owner = user.name;
  hub->workspace = ws_name;
  hub->ephemeral = ephemeral;
  hub->workspace_config = workspace_config(user);
  int64_t limit = user.limits.exec_timeout_s ? *user.limits.exec_timeout_s : config_.execute_limit_s;
  hub->set_execute_limit(std::chrono::seconds(limit));
  // ipykernel's cwd is still the placeholder under the new mount: enter the workspace.
  const std::string code = "__import__('os').environ.update(__import__('json').loads(" + json(json(delta).dump()).dump() +
                           "))\n__import__('os').chdir('/workspace')\n";
  auto applied = co_await run_silent(hub, code, kClaimStepTimeout);
  if (!applied) {
    fail("env and cwd: " + applied.error().message);
    co_return nullptr;
  }
  kernel.retarget(cold.workspace_dir, env, cold.limits);
  kernels_[id] = hub;
  --starting_[user.name];
  state::KernelRecord rec{id, user.name, spec, ws_name, pooled.runtime_dir, 0, "", common::iso8601_now(), "starting"};
  (void)state::delete_kernel(*db_, id);  // its record as a pool kernel
  if (auto st = state::insert_kernel(*db_, rec); !st)
    common::log_error("kernel={} msg=\"cannot record kernel\" error=\"{}\"", id, st.error().message);
  (void)state::set_kernel_helper(*db_, id, kernel.process().pid, kernel.process().status_file);
  (void)state::set_kernel_state(*db_, id, "running");
  audit(caller, "start", "kernel", id, {{"kernelspec", spec}, {"workspace", ws_name}, {"pool", true}});
  common::log_info("kernel={} name={} owner={} msg=\"pooled kernel claimed\"", id, spec, user.name);
  kernel_pool_->refill_after(std::chrono::seconds(1));
  co_return hub;
}

}  // namespace cellgate::gateway
