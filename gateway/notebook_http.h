// SPDX-License-Identifier: BSD-3-Clause
// notebook_http: Kernel Gateway's notebook-http personality. `cellgate serve --notebook-http NB.ipynb`
// serves NB's annotated cells (see notebook_api.h) as HTTP endpoints, on a pool of jailed kernels seeded
// with NB's other code cells. The Jupyter API is not served in this mode.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "common/result.h"
#include "gateway/config.h"
#include "gateway/http/types.h"
#include "gateway/notebook_api.h"
#include "gateway/seed.h"

namespace cellgate::gateway {

using http::Response;

class Gateway;
class NotebookKernelPool;

// Io thread only.
class NotebookHttp {
 public:
  // Reads the notebook and finds its endpoints. Throws ConfigError (one line) when it cannot be read,
  // has no annotated cell, or its kernelspec is unknown.
  NotebookHttp(const Config& config, const std::map<std::string, launcher::KernelSpec>& specs);
  ~NotebookHttp();

  // Starts the kernel pool; fails when a kernel cannot start (a failing seed cell, for example).
  boost::asio::awaitable<common::Status> start(Gateway& gw);
  // Serves one request whose path (without the base URL's trailing '/') is `path`, e.g. "/hello".
  boost::asio::awaitable<Response> handle(Request& req, std::string path);
  boost::asio::awaitable<void> stop();

  const std::vector<Endpoint>& endpoints() const { return endpoints_; }
  const std::string& kernel_name() const { return kernel_name_; }
  // The owner of the pool's kernels: kernels of this user left by a crashed run are shut down at start.
  static constexpr const char* kOwner = "notebook-http";

 private:
  const Config& config_;
  std::string kernel_name_;
  std::string language_;
  std::vector<Endpoint> endpoints_;
  std::shared_ptr<const Seed> seed_;
  std::unique_ptr<NotebookKernelPool> pool_;
};

}  // namespace cellgate::gateway
