// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include "gateway/http/types.h"

using namespace cellgate::http;
namespace http = cellgate::http;

TEST_CASE("query parameters are found and decoded", "[http]") {
  CHECK(query_param("/a?token=abc&session_id=x%20y", "token") == "abc");
  CHECK(query_param("/a?token=abc&session_id=x%20y", "session_id") == "x y");
  CHECK(query_param("/a?tokenx=1", "token").empty());
  CHECK(query_param("/a", "token").empty());
  CHECK(target_path("/api/kernels?x=1") == "/api/kernels");
  CHECK(percent_decode("%zz%4") == "%zz%4");
  CHECK(percent_decode("a+b") == "a+b");
}

TEST_CASE("errors become {reason, message} with the mapped status", "[http]") {
  Request req{http::verb::get, "/", 11};
  auto res = error_response(req, cellgate::common::Errc::kNotFound, "no such kernel");
  CHECK(res.result() == http::status::not_found);
  auto body = nlohmann::json::parse(res.body());
  CHECK(body["reason"] == "Not Found");
  CHECK(body["message"] == "no such kernel");
  CHECK(res[http::field::content_type] == "application/json");
  auto bad_utf8 = error_response(req, cellgate::common::Errc::kBadRequest, "bad \xff input");
  CHECK(nlohmann::json::parse(bad_utf8.body())["reason"] == "Bad Request");
}
