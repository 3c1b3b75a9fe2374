// SPDX-License-Identifier: BSD-3-Clause
// metrics_api: GET /metrics, the gateway's figures in the Prometheus text format (metrics/).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "gateway/api/route.h"

namespace cellgate::gateway {
class Gateway;
}

namespace cellgate::api {

class McpApi;

// Role::kMetrics: an admin's token or --metrics-token. The census is taken here, on the io thread,
// from the tables the gateway keeps; nothing is walked on disk per scrape.
// Storage figures (the store's bytes and objects, each workspace's bytes at its newest snapshot) are
// measured at most once a minute, whoever scrapes, or every 2 s while snapshots are being taken or
// restored: a walk of the store on the offload pool and one query per workspace; scrapes between
// use the last measure. (A gc or a deleted workspace shows within the minute.)
class MetricsApi {
 public:
  MetricsApi(gateway::Gateway& gw, const McpApi& mcp) : gw_(gw), mcp_(mcp) {}
  boost::asio::awaitable<http::Reply> metrics(Call& call);

  struct Storage {
    uint64_t store_bytes = 0, store_objects = 0, workspace_bytes = 0;
    std::map<std::string, uint64_t> workspace_bytes_by_user;
  };

 private:
  boost::asio::awaitable<void> measure_storage();

  gateway::Gateway& gw_;
  const McpApi& mcp_;
  Storage storage_;
  std::optional<std::chrono::steady_clock::time_point> measured_at_;
  bool measuring_ = false;
  uint64_t measured_changes_ = 0;  // snapshots taken and restored when last measured
};

}  // namespace cellgate::api
