// SPDX-License-Identifier: BSD-3-Clause
// artifacts_api: /api/artifacts: files published out of a workspace (publish, list, download with
// ranges, delete) and expiring signed links that download one without a token.
#pragma once

#include <optional>
#include <string>

#include "gateway/api/route.h"
#include "gateway/artifact_store.h"
#include "gateway/signed_link.h"

namespace cellgate::gateway {
class Audit;
class Offload;
}  // namespace cellgate::gateway
namespace cellgate::state {
class Database;
struct User;
}

namespace cellgate::api {

struct ArtifactsOptions {
  std::string base_url;
  int max_per_user = 0;  // artifacts one owner may hold; 0 = none
  bool https = false;    // the gateway serves HTTPS (a link's scheme)
};

class ArtifactsApi {
 public:
  ArtifactsApi(workspace::WorkspaceManager& workspaces, state::Database& db, gateway::Offload& offload,
               gateway::Audit& audit, gateway::LinkSigner signer, ArtifactsOptions options)
      : workspaces_(workspaces), db_(db), offload_(offload), audit_(audit), store_(workspaces),
        signer_(std::move(signer)), options_(std::move(options)) {
    remove_orphaned_pins();
  }

  // POST /api/workspaces/{workspace}/artifacts {"path", "name"?}: 201 with the artifact.
  boost::asio::awaitable<http::Reply> publish(Call& call);
  // GET /api/artifacts: the caller's, newest first (an admin's: everyone's, or ?owner='s).
  boost::asio::awaitable<http::Reply> list(Call& call);
  // GET /api/artifacts/{artifact}: the bytes, whole or one range (206, 416), streamed from the store.
  boost::asio::awaitable<http::Reply> download(Call& call);
  boost::asio::awaitable<http::Reply> remove(Call& call);
  // POST /api/artifacts/{artifact}/link {"expires_in": seconds}: a URL that needs no token.
  boost::asio::awaitable<http::Reply> link(Call& call);
  // GET /api/shared/artifacts/{shared}?expires=&signature= (public): the signature, then expiry, then
  // the artifact: 403, 410, 404 with {"reason","message"}.
  boost::asio::awaitable<http::Reply> shared(Call& call);

 private:
  boost::asio::awaitable<http::Reply> serve(const http::Request& req, const state::ArtifactRow& row);
  // The quota an artifact of owner's is checked against: the owner's own (whoever publishes). Io thread.
  common::Result<gateway::ArtifactLimits> owner_limits(const state::User& caller, const std::string& owner);
  // At start, before anything is served: the artifact pins no row names go (a crash between a
  // publish's pin and its row, or between a delete's row and its pin), so that their bytes stop
  // counting against their owner's quota and gc may take them. With a shared store, a pin written in
  // the last 10 minutes stays: another node's publish may be between its pin and its row. Blocking;
  // logs what it removes.
  void remove_orphaned_pins();
  // kForbidden when owner holds max_per_user artifacts already. Io thread.
  std::optional<common::Error> over_count(const std::string& owner);

  workspace::WorkspaceManager& workspaces_;
  state::Database& db_;
  gateway::Offload& offload_;
  gateway::Audit& audit_;
  gateway::ArtifactStore store_;
  gateway::LinkSigner signer_;
  ArtifactsOptions options_;
};

}  // namespace cellgate::api
