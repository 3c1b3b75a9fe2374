// SPDX-License-Identifier: BSD-3-Clause
// router: the REST API and kernel WebSocket as one http::Handler. It matches a request against the
// route table (routes.cc), authenticates it unless the route is public, checks the route's role,
// resolves the ids its path names for this caller, then calls the handler. Order of checks: CORS
// preflight, match (a public route stops here), token, 404/405, role, ids, handler.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gateway/api/route.h"
#include "gateway/http/cors.h"
#include "gateway/http/handler.h"

namespace cellgate::gateway {
class Gateway;
}

namespace cellgate::api {

struct Handlers;

// Io thread only. gateway must outlive it.
class Router : public http::Handler {
 public:
  // extra: routes matched after the table's (tests, or a front end built on this one).
  explicit Router(gateway::Gateway& gateway, std::vector<Route> extra = {});
  ~Router() override;

  boost::asio::awaitable<http::Reply> handle(http::Request req, http::Peer peer) override;
  boost::asio::awaitable<http::Upgrade> upgrade(http::Request& req, http::Peer peer) override;
  // Counted in cellgate_requests_refused_total (header_too_large, body_too_large, message_too_big).
  void refused(http::Refusal what) noexcept override;
  // A body over 64 KiB is read only for a request whose token is valid.
  boost::asio::awaitable<bool> may_send_large_body(const http::Request& head, const http::Peer& peer) override;
  // Where /mcp's tools call this gateway's REST API (plain HTTP on loopback), once it listens.
  void set_local_endpoint(const std::string& ip, int port);
  // The route table, in match order.
  const std::vector<Route>& routes() const { return routes_; }

 private:
  struct Match;
  // The route for method and the path below the base URL; allowed lists the methods the path has.
  Match match(http::verb method, std::string_view path) const;
  // Resolves the owned ids of a matched call; an error reply when one is not the caller's.
  boost::asio::awaitable<std::optional<http::Response>> resolve(Call& call);

  gateway::Gateway& gw_;
  http::CorsPolicy cors_;
  std::unique_ptr<Handlers> handlers_;
  std::vector<Route> routes_;
  std::vector<std::vector<std::string>> segments_;  // of each route's pattern
};

// The table: one line per route. Every route names a handler of one of the groups in handlers.
std::vector<Route> make_routes(Handlers& handlers);

}  // namespace cellgate::api
