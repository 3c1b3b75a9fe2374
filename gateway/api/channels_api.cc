// SPDX-License-Identifier: BSD-3-Clause
// channels_api: the kernel WebSocket.
#include "gateway/api/channels_api.h"

#include <fmt/core.h>

#include "common/random.h"
#include "gateway/api/cluster_routing.h"
#include "gateway/kernel_hub.h"
#include "journal/entry.h"

namespace cellgate::api {

using boost::asio::awaitable;
using common::Errc;

namespace {

// One open WebSocket of a user, counted until the connection ends.
class OpenSocket {
 public:
  OpenSocket(std::shared_ptr<std::map<std::string, int>> counts, std::string user)
      : counts_(std::move(counts)), user_(std::move(user)) {
    ++(*counts_)[user_];
  }
  OpenSocket(const OpenSocket&) = delete;
  OpenSocket& operator=(const OpenSocket&) = delete;
  ~OpenSocket() {
    if (--(*counts_)[user_] <= 0) counts_->erase(user_);
  }

 private:
  std::shared_ptr<std::map<std::string, int>> counts_;
  std::string user_;
};

// v1 when the client offers it among its Sec-WebSocket-Protocol values, else the legacy protocol.
protocol::WsProtocol negotiate(const http::Request& req) {
  std::string_view offered(req[http::field::sec_websocket_protocol].data(), req[http::field::sec_websocket_protocol].size());
  while (!offered.empty()) {
    auto comma = offered.find(',');
    auto item = offered.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item == protocol::kV1Subprotocol) return protocol::WsProtocol::kV1;
    if (comma == std::string_view::npos) break;
    offered.remove_prefix(comma + 1);
  }
  return protocol::WsProtocol::kLegacy;
}

}  // namespace

std::shared_ptr<http::WsUserQueue> ChannelsApi::user_queue(const std::string& user) {
  if (options_.user_queue_bytes == 0 && options_.user_read_bytes == 0) return nullptr;
  std::erase_if(queues_, [](const auto& entry) { return entry.second.expired(); });  // users with no socket open
  auto& slot = queues_[user];
  auto queue = slot.lock();
  if (!queue) {
    queue = std::make_shared<http::WsUserQueue>();
    queue->cap = options_.user_queue_bytes;
    queue->read_cap = options_.user_read_bytes;
    slot = queue;
  }
  return queue;
}

awaitable<http::Upgrade> ChannelsApi::connect(Call& call) {
  const state::User& user = call.caller.user;
  std::string session_id = call.query("session_id");
  if (session_id.empty()) session_id = common::random_uuid();
  if (session_id.size() > 256) co_return http::error_response(call.req, Errc::kBadRequest, "session_id too long");
  const int64_t cap = user.limits.max_connections ? *user.limits.max_connections : options_.max_connections_per_user;
  if (auto it = open_->find(user.name); cap > 0 && it != open_->end() && it->second >= cap) {
    if (options_.metrics) options_.metrics->request_refused(metrics::RefusedReason::kQuota);
    if (options_.events)
      options_.events->publish(events::EventType::kQuotaRefused, user.name, {{"limit", "max_connections"}, {"value", cap}});
    co_return http::json_response(
        call.req, http::status::too_many_requests,
        {{"reason", "Too Many Requests"},
         {"message", fmt::format("Resource Limit: max_connections ({}) open WebSockets for user {}", cap, user.name)}});
  }
  auto lease = std::make_shared<OpenSocket>(open_, user.name);
  std::string_view said(call.req["X-Cellgate-Client"].data(), call.req["X-Cellgate-Client"].size());
  http::WsLimits limits = options_.limits;
  limits.user_queue = user_queue(user.name);
  http::WsAccept accept{call.kernel,      std::move(session_id), negotiate(call.req), std::move(limits),
                        std::move(lease), user.name,             journal::claimed_client(said, journal::client::kWebSocket)};
  // Another node's kernel: the same socket, relayed there (the user's open sockets are counted here).
  if (call.remote) co_return co_await cluster_.relay(call, std::move(accept));
  co_return accept;
}

}  // namespace cellgate::api
