// SPDX-License-Identifier: BSD-3-Clause
// kernelspecs_api: GET /api/kernelspecs[/{name}] and the files a kernelspec lists as resources
// (GET /kernelspecs/{name}/{file}: logos, kernel.js, kernel.css; never any other path).
#pragma once

#include <string>

#include "gateway/api/route.h"

namespace cellgate::gateway {
class KernelManager;
}

namespace cellgate::api {

class KernelspecsApi {
 public:
  KernelspecsApi(gateway::KernelManager& kernels, std::string base_url, std::string default_kernel)
      : kernels_(kernels), base_url_(std::move(base_url)), default_kernel_(std::move(default_kernel)) {}
  boost::asio::awaitable<http::Reply> list(Call& call);
  boost::asio::awaitable<http::Reply> get(Call& call);
  boost::asio::awaitable<http::Reply> resource(Call& call);

 private:
  gateway::KernelManager& kernels_;
  std::string base_url_;
  std::string default_kernel_;
};

}  // namespace cellgate::api
