// SPDX-License-Identifier: BSD-3-Clause
// users_api: GET /api/users, every user with their effective limits and what they use now (admins).
#pragma once

#include "gateway/api/route.h"

namespace cellgate::gateway {
class Gateway;
}

namespace cellgate::api {

// Role::kAdmin. Limits are the user's own or the gateway's defaults (null: none); usage is read from
// the kernels the gateway runs (memory from their cgroups), not from disk.
class UsersApi {
 public:
  explicit UsersApi(gateway::Gateway& gw) : gw_(gw) {}
  boost::asio::awaitable<http::Reply> list(Call& call);

 private:
  gateway::Gateway& gw_;
};

}  // namespace cellgate::api
