// SPDX-License-Identifier: BSD-3-Clause
// egress_server: the proxy's control socket — kernels' policies in, jails' proxy sockets in, stats out.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <nlohmann/json.hpp>

#include "egress/counter_store.h"
#include "egress/kernel_listener.h"
#include "egress/kernel_table.h"
#include "egress/proxy_services.h"
#include "egress/refusal_feed.h"

namespace cellgate::egress {

// The control protocol: one JSON request line per connection, one JSON answer line
// ({"ok": true, ...} or {"ok": false, "error": "one line"}). Only root, the proxy's own uid and
// --control-uid peers (SO_PEERCRED) are served; the socket itself is 0600 and never inside a jail.
//   {"op":"set","kernel":ID,"user":U,"policy":{...}}  create or replace; answers the canonical
//                                                     policy and the effective limits
//   {"op":"attach","kernel":ID}  from cellgate-jail: after {"ok":true}, one more message carries
//                                the listening socket and the jail init's pidfd (SCM_RIGHTS)
//   {"op":"remove","kernel":ID}  forget the kernel; its listener closes, its connections are cut
//   {"op":"stats","kernel":ID,"recent":N}  counters, limits, policy, the last N audit records
//   {"op":"list"}                every kernel's id, user, attached, counters
//   {"op":"watch"}               after {"ok":true}, one JSON line per refused connection, as they
//                                happen, until the peer goes away (refusal_feed.h)
class EgressServer {
 public:
  struct Config {
    bool ip_rules = false;
    EffectiveLimits defaults;
    std::vector<uid_t> control_uids;
    CounterStore* counters = nullptr;  // --state-dir: counters survive a restart (saved each second)
  };
  EgressServer(boost::asio::io_context& io, ProxyServices& services, Config config);
  ~EgressServer();
  EgressServer(const EgressServer&) = delete;
  EgressServer& operator=(const EgressServer&) = delete;
  // Takes a bound, listening unix socket and serves it until the io_context stops.
  void serve(boost::asio::local::stream_protocol::acceptor control);
  // The handler of one request line (also the unit tests' entry point); attach is answered here
  // and completed by the connection, which then receives the fds.
  nlohmann::json handle(const nlohmann::json& request);
  void attach(const std::string& kernel, common::UniqueFd listener, common::UniqueFd init_pidfd);
  // Writes the counters now (at exit; the server also saves every second while it runs).
  void save_counters();

 private:
  boost::asio::awaitable<void> accept_loop();
  boost::asio::awaitable<void> serve_peer(boost::asio::local::stream_protocol::socket peer);
  bool peer_allowed(int fd) const;
  void stop_listener(const std::string& kernel);
  boost::asio::awaitable<void> save_loop();

  boost::asio::io_context& io_;
  ProxyServices& services_;
  Config config_;
  KernelTable kernels_;
  RefusalFeed refusals_;
  std::map<std::string, std::shared_ptr<KernelListener>> listeners_;
  std::unique_ptr<boost::asio::local::stream_protocol::acceptor> control_;
};

}  // namespace cellgate::egress
