// SPDX-License-Identifier: BSD-3-Clause
// route: one entry of the API's route table (method, pattern, the role it needs, its handler), and
// the call a handler receives: authenticated, matched, and the resources its path names resolved.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <boost/asio/awaitable.hpp>

#include "gateway/auth.h"
#include "gateway/http/handler.h"
#include "state/artifact_records.h"
#include "state/journal_records.h"
#include "state/kernel_records.h"
#include "state/users.h"
#include "workspace/workspace.h"
#include "workspace/workspace_manager.h"

namespace cellgate::gateway {
class KernelHub;
}

namespace cellgate::api {

// What a route asks of the caller; the router checks it before the handler runs.
enum class Role {
  kPublic,  // no token: health checks, links that carry their own signature
  kUser,    // any valid token
  kOwner,   // a valid token, and the ids the path names ({kernel}, {session}, {workspace}, {journal},
            // {artifact}) are the caller's own (an admin's: anyone's); else 404, the answer for an id that
            // never existed
  kAdmin,   // an admin's token; else 403
  kMetrics, // an admin's token, or --metrics-token (which opens nothing else); else 403
};
const char* to_string(Role role);

// The path parameters that name something a user owns: a route with one needs Role::kOwner (or kAdmin).
// {journal}: a kernel id naming its journal, which outlives the kernel (retention drops it).
// {artifact}: a published artifact's id.
inline constexpr std::string_view kOwnedParams[] = {"kernel", "session", "workspace", "journal", "artifact"};

// A kernel another node holds (docs/cluster.md §5): the call is forwarded or relayed there.
struct RemoteKernel {
  state::KernelRecord row;
  std::string address;  // that node's internal listener
};

struct Call {
  http::Request& req;
  gateway::Caller caller;  // on public routes: no user (an empty name)
  std::map<std::string, std::string, std::less<>> params;  // percent-decoded; {name*}: the rest, joined by '/'
  std::shared_ptr<gateway::KernelHub> kernel;              // {kernel}
  std::optional<state::SessionRow> session;                // {session}
  std::optional<workspace::WorkspaceRef> workspace_ref;    // {workspace}: its owner and name
  std::optional<workspace::Workspace> workspace;           // {workspace}, opened with the caller's caps
  std::optional<RemoteKernel> remote;                      // {kernel}, when another node holds it
  std::optional<state::JournalRow> journal;                // {journal}: the kernel's journal, live or gone
  std::optional<state::ArtifactRow> artifact;              // {artifact}

  const std::string& param(std::string_view name) const;
  // A query parameter, percent-decoded ("" when absent).
  std::string query(std::string_view name) const;
};

using RestHandler = std::function<boost::asio::awaitable<http::Reply>(Call&)>;
using WsHandler = std::function<boost::asio::awaitable<http::Upgrade>(Call&)>;

struct Route {
  http::verb method;     // GET routes also answer HEAD (without the body)
  std::string pattern;   // below the base URL: "/api/kernels/{kernel}/interrupt"; {name*} last only
  Role role;
  std::variant<RestHandler, WsHandler> handler;  // WsHandler: a WebSocket upgrade
};

// Binds a member function of a handler group, which must outlive the table: one line per route.
template <class Group>
RestHandler on(Group& group, boost::asio::awaitable<http::Reply> (Group::*fn)(Call&)) {
  return [&group, fn](Call& call) { return (group.*fn)(call); };
}
template <class Group>
WsHandler on(Group& group, boost::asio::awaitable<http::Upgrade> (Group::*fn)(Call&)) {
  return [&group, fn](Call& call) { return (group.*fn)(call); };
}

// A reply with a body and no file or chunks.
inline http::Reply reply(http::Response res) { return http::Reply{std::move(res), {}, {}}; }

}  // namespace cellgate::api
