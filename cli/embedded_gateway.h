// SPDX-License-Identifier: BSD-3-Clause
// embedded_gateway: a whole gateway run inside this process on a thread of its own, listening on
// 127.0.0.1 with a random port and token, for `cellgate run` without --url. Clients reach it over
// loopback like any other gateway.
#pragma once

#include <memory>
#include <string>

#include "gateway/config.h"

namespace cellgate::cli {

class EmbeddedGateway {
 public:
  // Forces ip 127.0.0.1, port 0, a random token and shutdown_kernels_on_exit; throws ConfigError when
  // the gateway cannot be set up (bad data dir, no free port).
  explicit EmbeddedGateway(gateway::Config config);
  // Stops the gateway (its kernels are shut down) and joins its thread.
  ~EmbeddedGateway();
  EmbeddedGateway(const EmbeddedGateway&) = delete;
  EmbeddedGateway& operator=(const EmbeddedGateway&) = delete;

  std::string url() const;  // http://127.0.0.1:PORT/base/
  const std::string& token() const;
  // True once SIGINT or SIGTERM arrived: the gateway then interrupts its kernels, so that the run
  // stops and deletes its kernel (kernels run in sessions of their own and would outlive us).
  bool interrupted() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cellgate::cli
