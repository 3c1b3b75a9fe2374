// SPDX-License-Identifier: BSD-3-Clause
// kernel_manager_network: a running kernel's network policy changed (PATCH /api/kernels/{id}).
#include <fmt/core.h>

#include "common/log.h"

#include "egress/policy.h"
#include "gateway/egress_proxy.h"
#include "gateway/kernel_manager.h"
#include "gateway/kernel_network.h"
#include "state/kernel_records.h"

namespace cellgate::gateway {

using boost::asio::awaitable;
using common::Errc;
using common::make_error;
using nlohmann::json;

awaitable<common::Result<json>> KernelManager::set_network(std::shared_ptr<KernelHub> hub, json requested, std::string who) {
  auto& kernel = hub->kernel();
  const std::string id = kernel.id();
  auto turn = co_await hub->network_turn.acquire();
  // Judged as at start: against the owner's limit (an admin changing another's kernel gets no more),
  // else the kernelspec's policy, else none.
  auto owner = services_.users.get_user(hub->owner);
  if (!owner) co_return make_error(Errc::kInternal, "kernel " + id + ": its owner " + hub->owner + " is not in the database");
  auto specs = kernelspecs();
  auto spec = specs.find(kernel.name());
  if (spec == specs.end())
    co_return make_error(Errc::kConflict, fmt::format("network: kernel {}'s kernelspec {} is no longer installed", id, kernel.name()));
  auto policy = kernel_network(spec->second, owner.value(), requested, config_.egress_ip_rules);
  if (!policy) co_return policy.error();
  const bool networked = policy->mode != egress::Mode::kNone;
  if (!hub->egress_endpoint) {
    // The jail's network namespace has loopback only, fixed at clone(2): nothing can be routed in later.
    if (networked)
      co_return make_error(Errc::kConflict, fmt::format("network: kernel {} was started without network, so its jail has no "
                                                        "proxy endpoint; start a kernel with a network policy instead", id));
    co_return model(*hub);
  }
  if (!egress_) co_return make_error(Errc::kUnavailable, "network: the egress proxy is off");
  const json canonical = egress::policy_json(policy.value());
  // The proxy first: if it refuses or does not answer, nothing changed. Replacing a policy cuts the
  // connections the old one allowed (egress/kernel_table.h); the counters stay.
  const json request = {{"op", "set"}, {"kernel", id}, {"user", hub->owner}, {"policy", canonical}};
  auto set = co_await egress_->ask(request);
  if (!set) {
    const Errc code = set.error().code == Errc::kBadRequest ? Errc::kBadRequest : Errc::kUnavailable;
    co_return make_error(code, "network: " + set.error().message);
  }
  // Deleted while the proxy answered: nothing is recorded, and the policy just set goes again in case
  // it reached the proxy after remove()'s own request (if not, the proxy's "unknown kernel" is logged).
  if (auto it = kernels_.find(id); it == kernels_.end() || it->second != hub) {
    co_await forget_egress(id);
    co_return make_error(Errc::kNotFound, "kernel " + id + " was deleted while its network policy changed");
  }
  hub->network = canonical;
  // The row keeps the policy (none included) so that a restarted gateway gives the proxy this one.
  if (auto st = state::set_kernel_network(services_.db, id, canonical.dump()); !st)
    common::log_error("kernel={} msg=\"network policy not recorded\" error=\"{}\"", id, st.error().message);
  audit(who, "network", id, {{"owner", hub->owner}, {"network", canonical}});
  co_return model(*hub);
}

}  // namespace cellgate::gateway
