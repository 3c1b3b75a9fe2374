// SPDX-License-Identifier: BSD-3-Clause
// env: defaults, layering and the PATH search for the kernel command.
#include "isolation/env.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace cellgate::isolation;

namespace {
bool has(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}
}  // namespace

TEST_CASE("the environment is built from defaults, policy and options", "[isolation]") {
  auto env = build_env({{"MPLBACKEND", "svg"}, {"X", "policy"}}, {{"X", "option"}, {"LANG", "C"}});
  CHECK(has(env, "HOME=/workspace"));
  CHECK(has(env, "USER=sandbox"));
  CHECK(has(env, "LOGNAME=sandbox"));
  CHECK(has(env, "SHELL=/bin/bash"));
  CHECK(has(env, "TERM=dumb"));
  CHECK(has(env, "IPYTHONDIR=/tmp/.ipython"));
  CHECK(has(env, "XDG_CACHE_HOME=/tmp/.cache"));
  CHECK(has(env, "MPLBACKEND=svg"));
  CHECK(has(env, "X=option"));
  CHECK(has(env, "LANG=C"));
  CHECK_FALSE(has(env, "LANG=C.UTF-8"));
  CHECK(std::count_if(env.begin(), env.end(), [](const std::string& e) { return e.starts_with("X="); }) == 1);
}

TEST_CASE("nothing from the helper's own environment leaks", "[isolation]") {
  ::setenv("CELLGATE_SECRET_TEST", "leak", 1);
  auto env = build_env({}, {});
  for (const auto& e : env) CHECK(e.find("CELLGATE_SECRET_TEST") == std::string::npos);
}

TEST_CASE("exec candidates follow PATH unless the command has a slash", "[isolation]") {
  CHECK(exec_candidates("/usr/bin/python3", {}) == std::vector<std::string>{"/usr/bin/python3"});
  CHECK(exec_candidates("python3", {"PATH=/a:rel:/b"}) == std::vector<std::string>{"/a/python3", "/b/python3"});
  CHECK(exec_candidates("x", {"PATH="}).empty());
}
