// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include <cstdlib>

#include "kernel-launcher/kernel_env.h"

using namespace cellgate::launcher;
using nlohmann::json;

TEST_CASE("only KERNEL_ and allowed names pass from the client", "[launcher]") {
  std::set<std::string> dropped;
  auto env = filter_client_env(json{{"KERNEL_FOO", "1"}, {"NOT_ALLOWED", "x"}, {"EXTRA", "y"}}, {"EXTRA"}, &dropped);
  REQUIRE(env.has_value());
  CHECK(env->size() == 2);
  CHECK(env->at("KERNEL_FOO") == "1");
  CHECK(env->at("EXTRA") == "y");
  CHECK(dropped.count("NOT_ALLOWED") == 1);
}

TEST_CASE("malformed client env is a clear error", "[launcher]") {
  CHECK_FALSE(filter_client_env(json::array(), {}).has_value());
  CHECK_FALSE(filter_client_env(json{{"KERNEL_X", 1}}, {}).has_value());
  CHECK_FALSE(filter_client_env(json{{"BAD NAME", "x"}}, {}).has_value());
  CHECK_FALSE(filter_client_env(json{{"KERNEL_X", std::string(5000, 'a')}}, {}).has_value());
  CHECK_FALSE(filter_client_env(json{{"KERNEL_X", std::string("a\0b", 3)}}, {}).has_value());
  CHECK(filter_client_env(json(nullptr), {}).has_value());
}

TEST_CASE("the gateway's environment never reaches a kernel", "[launcher]") {
  ::setenv("CELLGATE_SECRET_FOR_TEST", "s3cret", 1);
  KernelSpec spec;
  spec.env = {{"FROM_SPEC", "${KERNEL_A}-${CELLGATE_SECRET_FOR_TEST}"}};
  auto env = build_kernel_env(spec, {{"KERNEL_A", "a"}}, {{"KERNEL_ID", "id"}});
  CHECK(env.at("FROM_SPEC") == "a-");
  CHECK(env.count("CELLGATE_SECRET_FOR_TEST") == 0);
  CHECK(env.at("KERNEL_ID") == "id");
  CHECK(env.count("PATH") == 1);
  for (const auto& [k, v] : env) CHECK(v.find("s3cret") == std::string::npos);
}

TEST_CASE("substitute_vars", "[launcher]") {
  CHECK(substitute_vars("${A}/${B}/${", {{"A", "1"}}) == "1//${");
  CHECK(substitute_vars("no vars", {}) == "no vars");
}
