// SPDX-License-Identifier: BSD-3-Clause
// channels_api: GET /api/kernels/{kernel}/channels?session_id=S, the kernel WebSocket, in the legacy
// JSON protocol or v1.kernel.websocket.jupyter.org (the subprotocol the client offers decides).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "events/event_log.h"
#include "gateway/api/route.h"
#include "metrics/gateway_metrics.h"

namespace cellgate::api {

class ClusterRouting;

struct ChannelsOptions {
  http::WsLimits limits;
  int64_t max_connections_per_user = 64;  // 0 = none; a user's own max_connections wins
  uint64_t user_queue_bytes = 0;          // what one user's WebSockets may queue together; 0 = no bound
  uint64_t user_read_bytes = 0;           // what one user's client messages being read may hold together; 0 = no bound
  metrics::GatewayMetrics* metrics = nullptr;  // refusals counted (null: not)
  events::EventLog* events = nullptr;          // refusals told (null: not)
};

class ChannelsApi {
 public:
  ChannelsApi(ClusterRouting& cluster, ChannelsOptions options) : cluster_(cluster), options_(options) {}
  // A refusal (session_id too long, the user's open WebSockets at their cap), else the connection.
  boost::asio::awaitable<http::Upgrade> connect(Call& call);

 private:
  ClusterRouting& cluster_;
  ChannelsOptions options_;
  // user → open WebSockets; shared with the leases, so one outliving this is safe.
  std::shared_ptr<std::map<std::string, int>> open_ = std::make_shared<std::map<std::string, int>>();
  // user → what their open WebSockets hold together (held by the connections).
  std::map<std::string, std::weak_ptr<http::WsUserQueue>> queues_;
  std::shared_ptr<http::WsUserQueue> user_queue(const std::string& user);
};

}  // namespace cellgate::api
