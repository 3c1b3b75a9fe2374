// SPDX-License-Identifier: BSD-3-Clause
// status_api: GET /api (version), /api/status (activity; an admin also sees the warm pool and /mcp),
// /api/me (who the token belongs to).
#pragma once

#include "common/time_format.h"
#include "gateway/api/route.h"

namespace cellgate::gateway {
class KernelManager;
}

namespace cellgate::api {

class McpApi;

class StatusApi {
 public:
  StatusApi(gateway::KernelManager& kernels, common::SystemTime started, const McpApi& mcp)
      : kernels_(kernels), started_(started), mcp_(mcp) {}
  boost::asio::awaitable<http::Reply> version(Call& call);
  boost::asio::awaitable<http::Reply> status(Call& call);
  boost::asio::awaitable<http::Reply> me(Call& call);

 private:
  gateway::KernelManager& kernels_;
  common::SystemTime started_;
  const McpApi& mcp_;
};

}  // namespace cellgate::api
