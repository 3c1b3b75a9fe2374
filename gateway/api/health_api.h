// SPDX-License-Identifier: BSD-3-Clause
// health_api: GET /healthz (the process answers) and GET /readyz (it can serve), for load balancers.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "gateway/api/route.h"

namespace cellgate::gateway {
class Gateway;
}

namespace cellgate::api {

// Public, so they say nothing but ok or not: which check failed goes to the log (once per change).
// /readyz: the database answers (within 2 s, asked on the database thread, one probe's statement at a
// time: no caller makes the io thread wait on the database), the snapshot store is writable, the fork
// server (when on) listens, and a jail can start. The last is a real jail (cellgate-jail running /usr/bin/true), started at most
// once a minute whoever asks and however often: probes between read its last outcome, so an
// unauthenticated caller cannot make the host start jails.
class HealthApi {
 public:
  explicit HealthApi(gateway::Gateway& gw) : gw_(gw) {}
  boost::asio::awaitable<http::Reply> healthz(Call& call);
  boost::asio::awaitable<http::Reply> readyz(Call& call);

 private:
  // "" when ready, else the first check that failed.
  boost::asio::awaitable<std::string> first_failure();
  boost::asio::awaitable<std::string> jail_failure();

  gateway::Gateway& gw_;
  std::string last_failure_;
  std::optional<std::chrono::steady_clock::time_point> probed_at_;
  bool probing_ = false;
  std::string probe_failure_ = "no jail probed yet";
  // A probe's SELECT 1 is still on the database thread (set by the io thread, cleared by that thread).
  std::shared_ptr<std::atomic<bool>> db_probing_ = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace cellgate::api
