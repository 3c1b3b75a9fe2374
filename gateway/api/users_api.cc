// SPDX-License-Identifier: BSD-3-Clause
// users_api: GET /api/users, every user with their effective limits and what they use now (admins).
#include "gateway/api/users_api.h"

#include <map>

#include "gateway/gateway.h"
#include "gateway/kernel_manager.h"

namespace cellgate::api {

using nlohmann::json;

namespace {

struct Usage {
  int64_t kernels = 0;
  int64_t connections = 0;
  uint64_t memory_bytes = 0;
  double cpu_seconds = 0;
};

template <class T, class D>
json limit(const std::optional<T>& own, D fallback) {
  if (own) return *own;
  return fallback ? json(fallback) : json(nullptr);
}

}  // namespace

boost::asio::awaitable<http::Reply> UsersApi::list(Call& call) {
  const auto& config = gw_.config();
  std::map<std::string, Usage> usage;
  for (const auto& [id, hub] : gw_.kernels().kernels()) {
    auto& k = hub->kernel();
    auto& u = usage[hub->owner];
    ++u.kernels;
    u.connections += hub->connections();
    if (k.state() != launcher::KernelState::kDead && k.process().pid > 0) {
      u.memory_bytes += k.spawner().memory_usage(k.process());
      u.cpu_seconds += k.spawner().cpu_seconds(k.process());
    }
  }
  auto users = gw_.users().list_users();
  if (!users) co_return reply(http::error_response(call.req, users.error()));
  if (call.caller.user.implicit) users->insert(users->begin(), call.caller.user);  // single-token mode
  json out = json::array();
  for (const auto& user : users.value()) {
    const auto& l = user.limits;
    const Usage u = usage.count(user.name) ? usage[user.name] : Usage{};
    out.push_back({{"name", user.name},
                   {"admin", user.admin},
                   {"created", user.created},
                   {"limits",
                    {{"max_kernels", limit(l.max_kernels, config.max_kernels_per_user)},
                     {"memory_bytes", limit(l.memory_bytes, config.limits.memory_bytes)},
                     {"cpus", limit(l.cpus, config.limits.cpus)},
                     {"pids", limit(l.pids, config.limits.pids)},
                     {"max_connections", limit(l.max_connections, config.max_connections_per_user)},
                     {"workspace_bytes", limit(l.workspace_bytes, config.workspace_bytes)},
                     {"exec_timeout_s", limit(l.exec_timeout_s, 0)}}},
                   {"usage",
                    {{"kernels", u.kernels},
                     {"connections", u.connections},
                     {"memory_bytes", u.memory_bytes},
                     {"cpu_seconds", u.cpu_seconds}}}});
  }
  co_return reply(http::json_response(call.req, http::status::ok, out));
}

}  // namespace cellgate::api
