// SPDX-License-Identifier: BSD-3-Clause
// kernel_manager_network: a kernel's network: its route through the egress proxy, its policy changed
// (PATCH /api/kernels/{id}), its record there (GET .../egress), and every policy given back to a
// restarted proxy.
#include <signal.h>
#include <sys/wait.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/core.h>

#include "common/log.h"

#include "egress/policy.h"
#include "gateway/egress_proxy.h"
#include "gateway/kernel_manager.h"
#include "gateway/kernel_network.h"
#include "kernel-launcher/egress_env.h"
#include "kernel-launcher/spawn_util.h"
#include "state/kernel_records.h"

namespace cellgate::gateway {

namespace asio = boost::asio;
using asio::awaitable;
using common::Errc;
using common::make_error;
using nlohmann::json;

namespace {

// cellgate-egress's options from the config: what it resolves and trusts, its secrets, its defaults,
// and the gateway's own endpoint, which no rule reaches.
EgressProxyOptions egress_options(const Config& c) {
  EgressProxyOptions o{c.egress_binary, c.runtime_dir, c.data_dir, {}};
  auto add = [&](const char* flag, const std::string& v) {
    if (!v.empty()) o.extra.insert(o.extra.end(), {flag, v});
  };
  add("--hosts", c.egress_hosts);
  add("--secrets", c.egress_secrets);
  add("--upstream-ca", c.egress_upstream_ca);
  add("--limits", c.egress_limits);
  if (!c.egress_dns) o.extra.push_back("--no-dns");
  if (c.egress_ip_rules) o.extra.push_back("--ip-rules");
  if (c.port > 0) {
    const std::string host = c.ip.find(':') != std::string::npos ? "[" + c.ip + "]" : c.ip;
    o.extra.insert(o.extra.end(), {"--deny", fmt::format("{}:{}=the gateway", host, c.port)});
  }
  return o;
}

}  // namespace

void KernelManager::start_egress_proxy() {
  egress_ = std::make_unique<EgressProxy>(io_, egress_options(config_));
  egress_->on_refusal([this](const json& record) { egress_refused(record); });
  if (auto st = egress_->start(); !st) throw ConfigError("--egress: " + st.error().message);
  egress_->on_restart([this] { resync_egress(); });
}

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

awaitable<common::Result<json>> KernelManager::egress(std::shared_ptr<KernelHub> hub, size_t recent) const {
  const std::string id = hub->kernel().id();
  if (!hub->egress_endpoint) co_return json{{"kernel", id}, {"policy", hub->network}, {"recent", json::array()}};
  if (!egress_) co_return make_error(Errc::kUnavailable, "the egress proxy is off");
  const json request = {{"op", "stats"}, {"kernel", id}, {"recent", recent}};
  auto stats = co_await egress_->ask(request);
  if (!stats) co_return make_error(Errc::kUnavailable, "egress proxy: " + stats.error().message);
  json out = std::move(stats.value());
  out.erase("ok");
  co_return out;
}

awaitable<void> KernelManager::forget_egress(std::string id) {
  if (!egress_) co_return;
  const json request = {{"op", "remove"}, {"kernel", id}};
  if (auto r = co_await egress_->ask(request); !r)
    common::log_warn("kernel={} msg=\"egress proxy: remove failed\" error=\"{}\"", id, r.error().message);
}

void KernelManager::egress_refused(const json& record) {
  const auto why = metrics::egress_refusal_from(record.value("refused_by", std::string()));
  if (services_.metrics) {
    services_.metrics->egress_refused(why);
    if (const auto lost = record.value("dropped", uint64_t{0}); lost > 0)
      services_.metrics->egress_refused(metrics::EgressRefusal::kOther, lost);
  }
  auto it = kernels_.find(record.value("kernel", std::string()));
  if (it == kernels_.end()) return;  // gone meanwhile
  // The event log allows one refusal event per owner a second; the rest are counted into the next.
  publish(events::EventType::kEgressRefused, *it->second,
          {{"host", record.value("host", std::string())},
           {"port", record.value("port", 0)},
           {"connection", record.value("kind", std::string())},
           {"refused_by", std::string(metrics::label(why))},
           {"reason", record.value("reason", std::string())}});
}

void KernelManager::route_through_egress(launcher::KernelOptions& ko) const {
  ko.egress = launcher::EgressEndpoint{egress_->control(), 3128, egress_->ca_bundle()};
  for (auto& [k, v] : launcher::egress_env(ko.egress)) ko.env[k] = v;
}

void KernelManager::resync_egress() {
  if (!egress_) return;
  asio::co_spawn(io_, resync_egress_now(resync_, ++*resync_), asio::detached);
}

awaitable<void> KernelManager::resync_egress_now(std::shared_ptr<uint64_t> current, uint64_t mine) {
  // Everything here is awaited on the io thread, never blocking it: each request to the proxy within
  // its 5 s, each hand-back within 10 s. A newer resync (the proxy restarted again), stop() or the
  // manager's end overtakes this one: `current` is checked after every wait, before touching *this.
  auto overtaken = [&] { return *current != mine; };
  std::vector<std::shared_ptr<KernelHub>> networked;
  for (const auto& [id, hub] : kernels_)
    if (hub->egress_endpoint) networked.push_back(hub);
  for (const auto& hub : networked) {
    if (overtaken() || !egress_) co_return;
    auto& kernel = hub->kernel();
    const std::string id = kernel.id();
    if (!kernels_.count(id)) continue;  // removed meanwhile, its policy with it
    std::optional<TurnLock::Turn> turn(co_await hub->network_turn.acquire());
    if (overtaken() || !egress_) co_return;
    if (!kernels_.count(id)) continue;
    // Read in its turn: a PATCH that changed it meanwhile has had its answer recorded.
    const json request = {{"op", "set"}, {"kernel", id}, {"user", hub->owner}, {"policy", hub->network}};
    auto set = co_await egress_->ask(request);
    turn.reset();
    if (overtaken()) co_return;
    if (!set) {
      common::log_error("kernel={} msg=\"egress proxy: cannot restore the policy\" error=\"{}\"", id, set.error().message);
      continue;
    }
    if (!kernels_.count(id) || kernel.state() == launcher::KernelState::kDead || kernel.process().status_file.empty())
      continue;
    // The jail's init still holds its endpoint; cellgate-jail takes it (pidfd_getfd) to the proxy.
    auto pid = launcher::spawn_in_session({config_.jail_helper, "--egress-attach", kernel.process().status_file,
                                           "--egress", egress_->control(), "--name", id},
                                          {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}}, "/", {});
    if (!pid) {
      common::log_error("kernel={} msg=\"egress endpoint not handed back\" error=\"{}\"", id, pid.error().message);
      continue;
    }
    launcher::ProcessHandle attach;
    attach.pid = pid.value();
    int status = -1;
    asio::steady_timer tick(io_);
    for (int i = 0; i < 1000 && (status = launcher::reap(attach)) < 0; ++i) {
      tick.expires_after(std::chrono::milliseconds(10));
      boost::system::error_code ec;
      co_await tick.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    if (status < 0) {  // still our unreaped child: its pid is still its own
      ::kill(attach.pid, SIGKILL);
      ::waitpid(attach.pid, nullptr, 0);
    }
    if (overtaken()) co_return;
    if (status != 0)
      common::log_error("kernel={} msg=\"egress endpoint not handed back\" status=\"{}\"", id,
                        status < 0 ? std::string("still running after 10 s") : launcher::describe_wait_status(status));
    else
      common::log_info("kernel={} msg=\"egress endpoint handed to the proxy\"", id);
  }
}

}  // namespace cellgate::gateway
