// SPDX-License-Identifier: BSD-3-Clause
// sessions_api: /api/sessions with jupyter_server's session model, kept in the state database.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gateway/api/route.h"

namespace cellgate::gateway {
class KernelManager;
}
namespace cellgate::state {
class Database;
}

namespace cellgate::api {

class ClusterRouting;

class SessionsApi {
 public:
  // max_per_user: session rows one user may hold (0 = no cap).
  SessionsApi(state::Database& db, gateway::KernelManager& kernels, ClusterRouting& cluster, std::string base_url,
              int max_per_user = 0)
      : db_(db), kernels_(kernels), cluster_(cluster), base_url_(std::move(base_url)), max_per_user_(max_per_user) {}
  boost::asio::awaitable<http::Reply> list(Call& call);
  boost::asio::awaitable<http::Reply> create(Call& call);
  boost::asio::awaitable<http::Reply> get(Call& call);
  boost::asio::awaitable<http::Reply> update(Call& call);
  boost::asio::awaitable<http::Reply> remove(Call& call);
  // The caller's session with that id ({session} of the route table), else nullopt; the database's
  // error when it cannot answer.
  common::Result<std::optional<state::SessionRow>> visible(const gateway::Caller& caller, const std::string& id);

 private:
  // The caller's sessions (an admin's: everyone's); rows whose kernel is gone are dropped, as
  // jupyter_server drops them on read.
  common::Result<std::vector<state::SessionRow>> visible_sessions(const gateway::Caller& caller);
  nlohmann::json model(const gateway::Caller& caller, const state::SessionRow& s);

  state::Database& db_;
  gateway::KernelManager& kernels_;
  ClusterRouting& cluster_;
  std::string base_url_;
  int max_per_user_ = 0;
};

}  // namespace cellgate::api
