// SPDX-License-Identifier: BSD-3-Clause
// frontend: Kernel Gateway's notebook-http personality as the gateway's whole HTTP front end.
// `cellgate serve --notebook-http NB.ipynb` serves NB's annotated cells (annotations.h) as endpoints,
// on kernels seeded with NB's other code cells; the Jupyter API is not served in this mode.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "common/result.h"
#include "gateway/http/cors.h"
#include "gateway/http/handler.h"
#include "gateway/seed.h"
#include "nbhttp/annotations.h"

namespace cellgate::gateway {
class Gateway;
}

namespace cellgate::nbhttp {

class KernelLender;

// Io thread only. gateway must outlive it.
class Frontend : public http::Handler {
 public:
  // Reads the notebook and finds its endpoints. Throws ConfigError (one line) when it cannot be read,
  // has no annotated cell, or its kernelspec is unknown.
  explicit Frontend(gateway::Gateway& gateway);
  ~Frontend() override;

  // Starts the kernels; fails when one cannot start (a failing seed cell, for example).
  boost::asio::awaitable<common::Status> start();
  // Shuts its kernels down, also one that was starting meanwhile.
  boost::asio::awaitable<void> stop();

  // The token is required unless --notebook-http-public; CORS as for the API.
  boost::asio::awaitable<http::Reply> handle(http::Request req, http::Peer peer) override;
  // Nothing here speaks WebSocket: refused (after the token, as the API would).
  boost::asio::awaitable<http::Upgrade> upgrade(http::Request& req, http::Peer peer) override;

  const std::vector<Endpoint>& endpoints() const { return endpoints_; }
  const std::string& kernel_name() const { return kernel_name_; }

 private:
  // One request whose path (below the base URL, with its leading '/') is path, e.g. "/hello".
  boost::asio::awaitable<http::Response> serve(http::Request& req, std::string path);

  gateway::Gateway& gw_;
  http::CorsPolicy cors_;
  std::string kernel_name_;
  std::string language_;
  std::vector<Endpoint> endpoints_;
  std::shared_ptr<const gateway::Seed> seed_;
  std::unique_ptr<KernelLender> kernels_;
};

}  // namespace cellgate::nbhttp
