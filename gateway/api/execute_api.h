// SPDX-License-Identifier: BSD-3-Clause
// execute_api: POST /api/kernels/{kernel}/execute {"code", "timeout"?, "env"?}: one JSON result, or
// with Accept: application/x-ndjson one line per output as it comes, then the result.
#pragma once

#include <cstddef>

#include "gateway/api/route.h"

namespace cellgate::api {

class ExecuteApi {
 public:
  explicit ExecuteApi(size_t output_limit) : output_limit_(output_limit) {}
  boost::asio::awaitable<http::Reply> execute(Call& call);

 private:
  size_t output_limit_;  // --execute-output-limit: bytes of outputs kept
};

}  // namespace cellgate::api
