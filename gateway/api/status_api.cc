// SPDX-License-Identifier: BSD-3-Clause
// status_api: the gateway's version, activity and the caller's identity.
#include "gateway/api/status_api.h"

#include "gateway/api/mcp_api.h"
#include "gateway/kernel_manager.h"

namespace cellgate::api {

using boost::asio::awaitable;

awaitable<http::Reply> StatusApi::version(Call& call) {
  co_return reply(http::json_response(call.req, http::status::ok, {{"version", "2.0.0"}, {"implementation", "cellgate 0.1.0"}}));
}

awaitable<http::Reply> StatusApi::status(Call& call) {
  const state::User& user = call.caller.user;
  int conns = 0, count = 0;
  common::SystemTime last = started_;
  for (const auto& [id, hub] : kernels_.kernels()) {
    if (!gateway::visible_to(*hub, user)) continue;
    ++count;
    conns += hub->connections();
    last = std::max(last, hub->kernel().last_activity());
  }
  nlohmann::json status = {{"started", common::iso8601(started_)},
                           {"last_activity", common::iso8601(last)},
                           {"kernels", count},
                           {"connections", conns}};
  if (user.admin) {
    if (auto pool = kernels_.pool_status(); !pool.is_null()) status["pool"] = std::move(pool);
    status["starts"] = kernels_.starts_status();
    status["mcp"] = mcp_.status();
  }
  co_return reply(http::json_response(call.req, http::status::ok, status));
}

awaitable<http::Reply> StatusApi::me(Call& call) {
  co_return reply(
      http::json_response(call.req, http::status::ok, {{"name", call.caller.user.name}, {"admin", call.caller.user.admin}}));
}

}  // namespace cellgate::api
