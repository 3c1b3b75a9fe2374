// SPDX-License-Identifier: BSD-3-Clause
// kernels_api: /api/kernels: list, start ({"name", "env", "workspace", "ephemeral", "network"}), get,
// shut down, interrupt and restart, as jupyter_server answers them; and a kernel's egress record.
#pragma once

#include <string>

#include "gateway/api/route.h"

namespace cellgate::gateway {
class KernelHub;
class KernelManager;
}  // namespace cellgate::gateway

namespace cellgate::api {

class ClusterRouting;

class KernelsApi {
 public:
  KernelsApi(gateway::KernelManager& kernels, ClusterRouting& cluster, std::string base_url)
      : kernels_(kernels), cluster_(cluster), base_url_(std::move(base_url)) {}
  boost::asio::awaitable<http::Reply> list(Call& call);
  boost::asio::awaitable<http::Reply> start(Call& call);
  boost::asio::awaitable<http::Reply> get(Call& call);
  boost::asio::awaitable<http::Reply> remove(Call& call);
  boost::asio::awaitable<http::Reply> interrupt(Call& call);
  boost::asio::awaitable<http::Reply> restart(Call& call);
  // GET /api/kernels/{id}/egress[?recent=N]: policy, limits, counters and the last N (default 100,
  // at most 256) audit lines of its connections, from the egress proxy.
  boost::asio::awaitable<http::Reply> egress(Call& call);
  // PATCH /api/kernels/{id} {"network": {...}|"none"}: the running kernel's network policy replaced,
  // within what its owner may have; 200 with the model.
  boost::asio::awaitable<http::Reply> patch(Call& call);
  // Freezes an idle kernel (the cgroup freezer, as --pause-after does) / thaws it; 200 with the model.
  boost::asio::awaitable<http::Reply> pause(Call& call);
  boost::asio::awaitable<http::Reply> resume(Call& call);

 private:
  gateway::KernelManager& kernels_;
  ClusterRouting& cluster_;
  std::string base_url_;
};

// Before a request reaches a kernel (interrupt, restart, execute, tools): a paused kernel is thawed
// (its messages would thaw it too, but tools/process joins the jail's frozen cgroup directly), and
// its activity clock restarts.
void wake(gateway::KernelHub& hub);

// Counts a REST call on a kernel for as long as it runs: the idle pauser leaves the kernel alone.
class InFlight {
 public:
  explicit InFlight(std::shared_ptr<gateway::KernelHub> hub);
  ~InFlight();
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

 private:
  std::shared_ptr<gateway::KernelHub> hub_;
};

// A JSON object body ({} when empty); kBadRequest otherwise.
common::Result<nlohmann::json> parse_object_body(const http::Request& req);

}  // namespace cellgate::api
