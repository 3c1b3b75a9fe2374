// SPDX-License-Identifier: BSD-3-Clause
// egress_proxy: the gateway's cellgate-egress — started with `cellgate serve`, restarted when it dies,
// and its control requests (a kernel's policy in, its counters and audit lines out).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include "common/result.h"
#include "kernel-launcher/exit_watch.h"
#include "kernel-launcher/spawner.h"

namespace cellgate::gateway {

struct EgressProxyOptions {
  std::string binary;               // cellgate-egress
  std::string runtime_dir;          // its control socket (egress.sock), log (egress.log), the jails' CA bundle
  std::string data_dir;             // its interception CA (egress-ca/) and audit log (egress-audit.jsonl)
  std::vector<std::string> extra;   // more of its options (--hosts, --secrets, --deny, --limits, ...)
};

// Io thread only. Kernels' endpoints are held by their jails' inits, so a proxy that dies loses no
// kernel: the restarted one gets every policy and endpoint back through on_restart.
class EgressProxy {
 public:
  EgressProxy(boost::asio::io_context& io, EgressProxyOptions options,
              std::chrono::milliseconds restart_delay = std::chrono::seconds(1));
  ~EgressProxy();  // stops it
  EgressProxy(const EgressProxy&) = delete;
  EgressProxy& operator=(const EgressProxy&) = delete;

  // Starts it and waits for its ready line (30 s at most). An error carries one line: why, with the
  // last line of its log.
  common::Status start();
  // SIGTERM, reaped within a second; no restart after this.
  void stop();
  bool running() const { return process_.pid > 0; }
  const std::string& control() const { return control_; }
  const std::string& ca_bundle() const { return ca_bundle_; }
  // Why a jail cannot bind ca_bundle() (a parent directory closed to others), or "".
  const std::string& unreachable() const { return unreachable_; }

  // One control request (egress/egress_server.h), awaited on the io thread, never blocking it:
  // connecting, sending and the whole answer within 5 s together. An {"ok":false} answer is
  // kBadRequest with the proxy's line; none (no proxy running, none in time) is kUnavailable.
  boost::asio::awaitable<common::Result<nlohmann::json>> ask(nlohmann::json request) const;
  // Called on the io thread once a restarted proxy is ready (not after the first start).
  void on_restart(std::function<void()> f) { on_restart_ = std::move(f); }
  // Called on the io thread with each connection the proxy refuses (its audit record, with
  // "refused_by"; "dropped": refusals the proxy could not queue for us before this one), from each
  // start on. Set before start().
  void on_refusal(std::function<void(const nlohmann::json&)> f) { on_refusal_ = std::move(f); }

 private:
  void watch();
  // Asks the proxy for its refusals ({"op":"watch"}) and reads them until it goes away.
  void follow_refusals();
  void stop_following();
  void stop_process();  // SIGTERM, then SIGKILL after a second; reaped

  boost::asio::io_context& io_;
  EgressProxyOptions options_;
  std::string control_, log_, ca_bundle_, unreachable_;
  std::chrono::milliseconds restart_delay_;
  launcher::ProcessHandle process_;
  std::unique_ptr<launcher::ExitWatch> watch_;
  boost::asio::steady_timer restart_;
  std::function<void()> on_restart_;
  std::function<void(const nlohmann::json&)> on_refusal_;
  struct RefusalStream;
  std::shared_ptr<RefusalStream> refusals_;
  bool stopped_ = false;
};

}  // namespace cellgate::gateway
