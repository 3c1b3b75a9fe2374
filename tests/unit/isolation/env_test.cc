// SPDX-License-Identifier: BSD-3-Clause
// env: defaults, layering and the PATH search for the kernel command.
#include "isolation/env.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

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

namespace {
std::string temp_file(const std::string& content) {
  char path[] = "/tmp/cellgate-env-XXXXXX";
  int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size()));
  ::close(fd);
  return path;
}
}  // namespace

TEST_CASE("an environment file holds NUL-ended K=V entries, values of any bytes", "[isolation]") {
  static const char kText[] = "A=1\0KERNEL_X=a b\nc=d\0EMPTY=\0";
  std::string text(kText, sizeof kText - 1);
  auto path = temp_file(text);
  EnvList env;
  REQUIRE(read_env_file(path, env, 256));
  ::unlink(path.c_str());
  REQUIRE(env.size() == 3);
  CHECK(env[0] == std::pair<std::string, std::string>{"A", "1"});
  CHECK(env[1] == std::pair<std::string, std::string>{"KERNEL_X", "a b\nc=d"});
  CHECK(env[2] == std::pair<std::string, std::string>{"EMPTY", ""});
}

TEST_CASE("a malformed environment file is refused, naming the file", "[isolation]") {
  for (const std::string& bad : {std::string("A=1"), std::string("=x\0", 3), std::string("novalue\0", 8)}) {
    auto path = temp_file(bad);
    EnvList env;
    auto st = read_env_file(path, env, 256);
    ::unlink(path.c_str());
    REQUIRE_FALSE(st);
    CHECK(st.error().message.find(path) != std::string::npos);
  }
  EnvList env;
  CHECK_FALSE(read_env_file("/nonexistent/env", env, 256));
  CHECK_FALSE(read_env_file("/tmp", env, 256));
  std::string many;
  for (int i = 0; i < 10; ++i) many += "K" + std::to_string(i) + "=v" + std::string(1, '\0');
  auto path = temp_file(many);
  CHECK_FALSE(read_env_file(path, env, 5));
  ::unlink(path.c_str());
}
