// SPDX-License-Identifier: BSD-3-Clause
// workspaces_api: /api/workspaces: a user's workspaces (an admin may name another owner with
// ?owner=), and their files: a file's bytes or a directory listing, an upload, a delete.
#pragma once

#include <string>

#include "gateway/api/route.h"

namespace cellgate::gateway {
class Audit;
class KernelManager;
class Offload;
}  // namespace cellgate::gateway
namespace cellgate::state {
class Database;
}

namespace cellgate::api {

class WorkspacesApi {
 public:
  WorkspacesApi(workspace::WorkspaceManager& workspaces, state::Database& db, gateway::Offload& offload,
                gateway::Audit& audit, const gateway::KernelManager& kernels, std::string base_url)
      : workspaces_(workspaces), db_(db), offload_(offload), audit_(audit), kernels_(kernels),
        base_url_(std::move(base_url)) {}
  boost::asio::awaitable<http::Reply> list(Call& call);
  boost::asio::awaitable<http::Reply> create(Call& call);
  boost::asio::awaitable<http::Reply> get(Call& call);
  boost::asio::awaitable<http::Reply> remove(Call& call);
  // Files: sent from the open file in pieces (no size bound, nothing of it held in memory).
  boost::asio::awaitable<http::Reply> read_file(Call& call);
  boost::asio::awaitable<http::Reply> write_file(Call& call);
  boost::asio::awaitable<http::Reply> delete_file(Call& call);

 private:
  // The kernels running on the call's workspace.
  std::vector<std::string> kernels_on(const workspace::WorkspaceRef& ref) const;

  workspace::WorkspaceManager& workspaces_;
  state::Database& db_;
  gateway::Offload& offload_;
  gateway::Audit& audit_;
  const gateway::KernelManager& kernels_;
  std::string base_url_;
};

}  // namespace cellgate::api
