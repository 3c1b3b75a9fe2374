// SPDX-License-Identifier: BSD-3-Clause
// router: the route table as one http::Handler.
#include "gateway/api/router.h"

#include <algorithm>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "common/assert.h"
#include "common/log.h"
#include "gateway/api/handlers.h"
#include "gateway/gateway.h"
#include "gateway/kernel_manager.h"
#include "gateway/workspace_caps.h"
#include "gateway/offload.h"
#include "journal/journal.h"
#include "state/kernel_records.h"

namespace cellgate::api {

namespace asio = boost::asio;
using asio::awaitable;
using common::Errc;

namespace {

// The path's segments, each percent-decoded after the split: an encoded '/' stays inside its segment.
std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (end > start) parts.push_back(http::percent_decode(path.substr(start, end - start)));
    start = end + 1;
  }
  return parts;
}

// Compares the SHA-256 digests with CRYPTO_memcmp: neither the time taken nor an early exit tells how
// much of a guess matched, or how long the secret is.
bool same_secret(std::string_view presented, std::string_view secret) {
  unsigned char a[EVP_MAX_MD_SIZE], b[EVP_MAX_MD_SIZE];
  unsigned int na = 0, nb = 0;
  if (EVP_Digest(presented.data(), presented.size(), a, &na, EVP_sha256(), nullptr) != 1 ||
      EVP_Digest(secret.data(), secret.size(), b, &nb, EVP_sha256(), nullptr) != 1)
    return false;
  return !presented.empty() && na == nb && CRYPTO_memcmp(a, b, na) == 0;
}

bool is_param(std::string_view segment) { return segment.size() > 2 && segment.front() == '{' && segment.back() == '}'; }

// {kernel} → "kernel", {path*} → "path" (rest = true).
std::string_view param_name(std::string_view segment, bool& rest) {
  std::string_view name = segment.substr(1, segment.size() - 2);
  rest = name.ends_with('*');
  if (rest) name.remove_suffix(1);
  return name;
}

bool owned(std::string_view name) {
  return std::find(std::begin(kOwnedParams), std::end(kOwnedParams), name) != std::end(kOwnedParams);
}

// Fills params when the path's segments fit the pattern's.
bool fits(const std::vector<std::string>& pattern, const std::vector<std::string>& parts,
          std::map<std::string, std::string, std::less<>>& params) {
  params.clear();
  size_t i = 0;
  for (; i < pattern.size(); ++i) {
    const std::string& seg = pattern[i];
    if (!is_param(seg)) {
      if (i >= parts.size() || parts[i] != seg) return false;
      continue;
    }
    bool rest = false;
    std::string name(param_name(seg, rest));
    if (rest) {
      std::string joined;
      for (size_t j = i; j < parts.size(); ++j) joined += (joined.empty() ? "" : "/") + parts[j];
      params[name] = std::move(joined);
      return true;
    }
    if (i >= parts.size()) return false;
    params[name] = parts[i];
  }
  return i == parts.size();
}

std::vector<std::string> pattern_segments(const std::string& pattern) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= pattern.size()) {
    size_t end = pattern.find('/', start);
    if (end == std::string::npos) end = pattern.size();
    if (end > start) out.push_back(pattern.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace

const char* to_string(Role role) {
  switch (role) {
    case Role::kPublic: return "public";
    case Role::kUser: return "user";
    case Role::kOwner: return "owner";
    case Role::kAdmin: return "admin";
    case Role::kMetrics: return "metrics";
  }
  return "?";
}

const std::string& Call::param(std::string_view name) const {
  static const std::string kNone;
  auto it = params.find(name);
  return it == params.end() ? kNone : it->second;
}

std::string Call::query(std::string_view name) const {
  return http::query_param(std::string_view(req.target().data(), req.target().size()), name);
}

struct Router::Match {
  const Route* route = nullptr;
  std::map<std::string, std::string, std::less<>> params;
  std::string allow;  // the methods of the routes whose pattern fits, when none has this method
};

Router::Router(gateway::Gateway& gw, std::vector<Route> extra)
    : gw_(gw), cors_(gw.config().allow_origins), handlers_(std::make_unique<Handlers>(gw)),
      routes_(make_routes(*handlers_)) {
  for (auto& r : extra) routes_.push_back(std::move(r));
  for (const auto& r : routes_) {
    segments_.push_back(pattern_segments(r.pattern));
    // The table states who may call each route: an id a user owns can only appear under a role
    // that checks it (an invariant of the table, tested in route_table_test).
    for (const auto& seg : segments_.back()) {
      bool rest = false;
      if (is_param(seg) && owned(param_name(seg, rest)))
        CELLGATE_ASSERT(r.role == Role::kOwner || r.role == Role::kAdmin);
    }
  }
}

Router::~Router() = default;

void Router::set_local_endpoint(const std::string& ip, int port) { handlers_->mcp.set_local_endpoint(ip, port); }

Router::Match Router::match(http::verb method, std::string_view path) const {
  Match m;
  const auto parts = split_path(path);
  std::map<std::string, std::string, std::less<>> params;
  for (size_t i = 0; i < routes_.size(); ++i) {
    const Route& r = routes_[i];
    if (!fits(segments_[i], parts, params)) continue;
    if (r.method == method) {
      m.route = &r;
      m.params = std::move(params);
      return m;
    }
    const std::string verb(http::to_string(r.method));
    if (m.allow.find(verb) == std::string::npos) m.allow += (m.allow.empty() ? "" : ", ") + verb;
  }
  return m;
}

awaitable<std::optional<http::Response>> Router::resolve(Call& call) {
  const auto& user = call.caller.user;
  if (auto it = call.params.find("kernel"); it != call.params.end()) {
    call.kernel = gw_.kernels().find(it->second, user);
    if (!call.kernel) {
      if (auto refused = co_await handlers_->cluster.resolve_remote(call, it->second)) co_return std::move(*refused);
    } else if (auto fenced = handlers_->cluster.refuse_if_fenced(call)) {
      co_return std::move(*fenced);
    }
    // The same answer as for an id that never existed: ids are no oracle.
    if (!call.kernel && !call.remote) co_return http::error_response(call.req, Errc::kNotFound, "Kernel does not exist: " + it->second);
  }
  if (auto it = call.params.find("session"); it != call.params.end()) {
    auto found = handlers_->sessions.visible(call.caller, it->second);
    if (!found) co_return http::error_response(call.req, found.error());
    call.session = std::move(found.value());
    if (!call.session) co_return http::error_response(call.req, Errc::kNotFound, "Session not found: " + it->second);
  }
  if (auto it = call.params.find("workspace"); it != call.params.end()) {
    workspace::WorkspaceRef ref{user.name, it->second};
    // An admin may act on another user's workspaces with ?owner=; anyone else's ?owner= is ignored.
    if (std::string o = call.query("owner"); !o.empty() && user.admin) ref.owner = o;
    auto& workspaces = gw_.workspaces();
    // The owner's limits, whoever acts: an admin's own caps never apply to another user's workspace.
    auto caps = gateway::owner_workspace_config(workspaces.config(), gw_.users(), user, ref.owner);
    if (!caps) co_return http::error_response(call.req, caps.error());
    auto opened = co_await gw_.offload().run([&] { return workspaces.open(ref); });
    if (!opened) co_return http::error_response(call.req, opened.error());
    call.workspace.emplace(workspaces.store(), opened->dir(), caps.value());
    call.workspace_ref = std::move(ref);
  }
  if (auto it = call.params.find("journal"); it != call.params.end()) {
    // What is recorded so far is committed first: a journal reads the same through any gateway.
    co_await gw_.journal().sync();
    auto row = state::get_journal(gw_.db(), it->second);
    if (!row && row.error().code != Errc::kNotFound) co_return http::error_response(call.req, row.error());
    if (!row || (row->owner != user.name && !user.admin))
      co_return http::error_response(call.req, Errc::kNotFound, "Journal does not exist: " + it->second);
    call.journal = std::move(row.value());
  }
  if (auto it = call.params.find("artifact"); it != call.params.end()) {
    auto row = state::get_artifact(gw_.db(), it->second);
    if (!row && row.error().code != Errc::kNotFound) co_return http::error_response(call.req, row.error());
    if (!row || (row->owner != user.name && !user.admin))
      co_return http::error_response(call.req, Errc::kNotFound, "Artifact does not exist: " + it->second);
    call.artifact = std::move(row.value());
  }
  co_return std::nullopt;
}

namespace {
// On the internal listener only, the node that forwarded a request names its client (the rate limiter
// and the audit log then see the client, not the node).
void believe_forwarded_for(const http::Request& req, http::Peer& peer) {
  if (peer.cluster_peer.empty()) return;
  auto xff = req["X-Forwarded-For"];
  if (!xff.empty() && xff.size() <= 64) peer.ip = std::string(xff);
}
}  // namespace

awaitable<http::Reply> Router::handle(http::Request req, http::Peer peer) {
  believe_forwarded_for(req, peer);
  http::Reply reply;
  try {
    std::string_view path = http::target_path(std::string_view(req.target().data(), req.target().size()));
    common::log_debug("method={} path={}", std::string(req.method_string()), std::string(path));
    const std::string& base = gw_.config().base_url;
    if (req.method() == http::verb::options) {
      reply.res = cors_.preflight(req);
    } else {
      // HEAD is GET without the body (RFC 9110 9.3.2): matched and served as GET, so every GET resource
      // answers it with the same status and headers; the session drops the body.
      if (req.method() == http::verb::head) req.method(http::verb::get);
      Match m = path.starts_with(base) ? match(req.method(), path.substr(base.size() - 1)) : Match{};
      std::optional<gateway::Caller> caller;
      bool metrics_token = false;
      if (m.route && m.route->role == Role::kMetrics && !gw_.config().metrics_token.empty())
        metrics_token = same_secret(gateway::Authenticator::presented_token(req), gw_.config().metrics_token);
      if ((m.route && m.route->role == Role::kPublic) || metrics_token) caller.emplace();
      else caller = co_await gw_.auth().authenticate(req, peer, reply.res);
      if (!caller)
        gw_.metrics().request_refused(reply.res.result() == http::status::too_many_requests ? metrics::RefusedReason::kRateLimit
                                                                                            : metrics::RefusedReason::kAuth);
      if (caller) {
        caller->peer = peer;
        if (!m.route && !m.allow.empty()) {
          reply.res = http::method_not_allowed(req);
          reply.res.set(http::field::allow, m.allow);
        } else if (!m.route) {
          reply.res = http::error_response(req, Errc::kNotFound, "not found");
        } else if ((m.route->role == Role::kAdmin || (m.route->role == Role::kMetrics && !metrics_token)) &&
                   !caller->user.admin) {
          gw_.metrics().request_refused(metrics::RefusedReason::kForbidden);
          reply.res = http::error_response(req, Errc::kForbidden, "only an admin may do this");
        } else {
          Call call{req, std::move(*caller), std::move(m.params), {}, {}, {}, {}, {}, {}, {}};
          if (auto refused = co_await resolve(call)) {
            reply.res = std::move(*refused);
          } else if (call.remote && std::holds_alternative<RestHandler>(m.route->handler)) {
            reply = co_await handlers_->cluster.forward(call);
          } else if (const auto* rest = std::get_if<RestHandler>(&m.route->handler)) {
            reply = co_await (*rest)(call);
          } else {
            reply.res = http::error_response(req, Errc::kBadRequest, "WebSocket upgrade required");
          }
        }
      }
    }
  } catch (const std::exception& e) {
    common::log_error("method={} msg=\"unexpected error\" error=\"{}\"", std::string(req.method_string()), e.what());
    reply = http::Reply{http::error_response(req, Errc::kInternal, "internal error"), {}, {}};
  }
  cors_.add_headers(req, reply.res);
  reply.res.set(http::field::server, "cellgate");
  co_return reply;
}

void Router::refused(http::Refusal what) noexcept {
  switch (what) {
    case http::Refusal::kHeaderTooLarge: gw_.metrics().request_refused(metrics::RefusedReason::kHeaderTooLarge); break;
    case http::Refusal::kBodyTooLarge: gw_.metrics().request_refused(metrics::RefusedReason::kBodyTooLarge); break;
    case http::Refusal::kMessageTooBig: gw_.metrics().request_refused(metrics::RefusedReason::kMessageTooBig); break;
  }
}

awaitable<bool> Router::may_send_large_body(const http::Request& head, const http::Peer& peer) {
  // The token alone (no route, no CORS): handle() checks everything again with the body.
  http::Response refusal;
  auto caller = co_await gw_.auth().authenticate(head, peer, refusal);
  co_return caller.has_value();
}

awaitable<http::Upgrade> Router::upgrade(http::Request& req, http::Peer peer) {
  believe_forwarded_for(req, peer);
  http::Response refusal;
  try {
    auto caller = co_await gw_.auth().authenticate(req, peer, refusal);
    if (!caller) {
      gw_.metrics().request_refused(refusal.result() == http::status::too_many_requests ? metrics::RefusedReason::kRateLimit
                                                                                        : metrics::RefusedReason::kAuth);
      co_return refusal;
    }
    if (!cors_.allowed(req)) {
      gw_.metrics().request_refused(metrics::RefusedReason::kForbidden);
      co_return http::error_response(req, Errc::kForbidden, "origin not allowed");
    }
    std::string_view path = http::target_path(std::string_view(req.target().data(), req.target().size()));
    const std::string& base = gw_.config().base_url;
    Match m = path.starts_with(base) ? match(http::verb::get, path.substr(base.size() - 1)) : Match{};
    const auto* ws = m.route ? std::get_if<WsHandler>(&m.route->handler) : nullptr;
    if (!ws) co_return http::error_response(req, Errc::kNotFound, "no WebSocket here");
    if (m.route->role == Role::kAdmin && !caller->user.admin) {
      gw_.metrics().request_refused(metrics::RefusedReason::kForbidden);
      co_return http::error_response(req, Errc::kForbidden, "only an admin may do this");
    }
    caller->peer = peer;
    Call call{req, std::move(*caller), std::move(m.params), {}, {}, {}, {}, {}, {}, {}};
    if (auto refused = co_await resolve(call)) co_return std::move(*refused);
    co_return co_await (*ws)(call);
  } catch (const std::exception& e) {
    common::log_error("msg=\"unexpected error in a WebSocket upgrade\" error=\"{}\"", e.what());
    co_return http::error_response(req, Errc::kInternal, "internal error");
  }
}

}  // namespace cellgate::api
