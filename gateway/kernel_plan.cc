// SPDX-License-Identifier: BSD-3-Clause
// kernel_plan: a kernel's launch options, from config, kernelspec and owner.
#include "gateway/kernel_plan.h"

#include <algorithm>

#include "kernel-launcher/kernel_env.h"
#include "workspace/layout.h"

namespace cellgate::gateway {

namespace {
const nlohmann::json* cellgate_metadata(const launcher::KernelSpec& spec) {
  auto md = spec.metadata.find("cellgate");
  return md != spec.metadata.end() && md->is_object() ? &*md : nullptr;
}
}  // namespace

void apply_kernelspec_policy(const Config& config, const std::shared_ptr<launcher::ReadBudget>& budget,
                             launcher::KernelOptions& ko) {
  ko.transport = config.transport;
  ko.policy_file = config.jail_policy;
  ko.limits = config.limits;
  // A kernelspec may choose its own jail policy and limits: metadata.cellgate {policy, memory, pids, cpus}.
  if (const auto* md = cellgate_metadata(ko.spec)) {
    if (auto p = md->find("policy"); p != md->end() && p->is_string()) ko.policy_file = p->get<std::string>();
    if (auto m = md->find("memory"); m != md->end() && m->is_number_unsigned()) ko.limits.memory_bytes = m->get<uint64_t>();
    if (auto p = md->find("pids"); p != md->end() && p->is_number_unsigned()) ko.limits.pids = p->get<uint32_t>();
    if (auto c = md->find("cpus"); c != md->end() && c->is_number() && c->get<double>() > 0) ko.limits.cpus = c->get<double>();
  }
  ko.start_timeout = std::chrono::seconds(config.kernel_start_timeout_s);
  ko.max_message_bytes = config.max_kernel_message_bytes;
  ko.read_budget = budget;
  ko.output_rate = config.kernel_output_rate;
  ko.shutdown_grace = std::chrono::milliseconds(config.shutdown_grace_ms);
}

void apply_liveness(const Config& config, launcher::KernelOptions& ko) {
  ko.heartbeat_timeout = std::chrono::seconds(config.heartbeat_timeout_s);
  ko.heartbeat_interval = std::min<std::chrono::milliseconds>(std::chrono::seconds(3), ko.heartbeat_timeout / 3);
  ko.freezer = config.freezer;
}

int pause_after_for(const Config& config, const launcher::KernelSpec& spec) {
  // A kernelspec may pause sooner, later or never: metadata.cellgate.pause_after (seconds, 0 = never).
  if (const auto* md = cellgate_metadata(spec)) {
    if (auto p = md->find("pause_after"); p != md->end() && p->is_number_unsigned())
      return static_cast<int>(std::min<uint64_t>(p->get<uint64_t>(), 1u << 30));
  }
  return config.pause_after_s;
}

int64_t execute_limit_for(const Config& config, const state::User* user) {
  return user && user->limits.exec_timeout_s ? *user->limits.exec_timeout_s : config.execute_limit_s;
}

launcher::KernelOptions cold_start_plan(const Config& config, const std::shared_ptr<launcher::ReadBudget>& budget,
                                        const std::string& kernel_id, const launcher::KernelSpec& spec,
                                        const state::User& user, const std::string& workspace_name,
                                        const std::string& workspace_dir,
                                        const std::map<std::string, std::string>& client_env) {
  launcher::KernelOptions ko;
  ko.kernel_id = kernel_id;
  ko.spec = spec;
  ko.runtime_dir = config.runtime_dir + "/k/" + kernel_id;
  ko.private_dir = config.runtime_dir + "/s/" + kernel_id;
  ko.workspace_dir = workspace_dir;
  std::map<std::string, std::string> forced = {
      {"KERNEL_ID", kernel_id}, {"KERNEL_USERNAME", user.name}, {"KERNEL_WORKSPACE", workspace_name}};
  // IPython's history database must not live in the workspace: snapshots would churn on it, and a
  // restore would swap it under the running kernel.
  if (config.spawner == "plain") {
    forced["HOME"] = ko.workspace_dir;
    forced["IPYTHONDIR"] = ko.private_dir + "/ipython";
  } else {
    forced["IPYTHONDIR"] = "/tmp/.ipython";
  }
  ko.env = launcher::build_kernel_env(ko.spec, client_env, forced);
  apply_kernelspec_policy(config, budget, ko);
  if (user.limits.memory_bytes) ko.limits.memory_bytes = static_cast<uint64_t>(*user.limits.memory_bytes);
  if (user.limits.cpus) ko.limits.cpus = *user.limits.cpus;
  if (user.limits.pids) ko.limits.pids = static_cast<uint32_t>(*user.limits.pids);
  return ko;
}

launcher::KernelOptions pool_plan(const Config& config, const std::shared_ptr<launcher::ReadBudget>& budget,
                                  const std::string& kernel_id, const launcher::KernelSpec& spec) {
  launcher::KernelOptions ko;
  ko.kernel_id = kernel_id;
  ko.spec = spec;
  ko.runtime_dir = config.runtime_dir + "/k/" + kernel_id;
  ko.private_dir = config.runtime_dir + "/s/" + kernel_id;
  ko.env = launcher::build_kernel_env(ko.spec, {}, {{"KERNEL_ID", kernel_id}, {"IPYTHONDIR", "/tmp/.ipython"}});
  apply_kernelspec_policy(config, budget, ko);
  ko.auto_restart = false;
  return ko;
}

launcher::KernelOptions adoption_plan(const Config& config, const std::shared_ptr<launcher::ReadBudget>& budget,
                                      const state::KernelRecord& rec,
                                      const std::map<std::string, launcher::KernelSpec>& specs) {
  launcher::KernelOptions ko;
  ko.kernel_id = rec.id;
  if (auto s = specs.find(rec.kernelspec); s != specs.end()) ko.spec = s->second;
  ko.spec.name = rec.kernelspec;
  ko.runtime_dir = rec.runtime_dir;
  ko.private_dir = config.runtime_dir + "/s/" + rec.id;
  ko.workspace_dir = workspace::workspace_dir(config.data_dir, rec.owner, rec.workspace) + "/tree";
  ko.env = launcher::build_kernel_env(
      ko.spec, {}, {{"KERNEL_ID", rec.id}, {"KERNEL_USERNAME", rec.owner}, {"KERNEL_WORKSPACE", rec.workspace}});
  ko.shutdown_grace = std::chrono::milliseconds(config.shutdown_grace_ms);
  ko.start_timeout = std::chrono::seconds(10);
  ko.max_message_bytes = config.max_kernel_message_bytes;
  ko.read_budget = budget;
  ko.output_rate = config.kernel_output_rate;
  return ko;
}

}  // namespace cellgate::gateway
