// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>

#include "gateway/config.h"

using namespace cellgate::gateway;

namespace {
Config load(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return load_config(static_cast<int>(argv.size()), argv.data());
}
}  // namespace

TEST_CASE("defaults, flags and generated token", "[gateway]") {
  auto c = load({"--port", "0", "--base-url", "gw", "--allow-env", "A", "--allow-env=B"});
  CHECK(c.port == 0);
  CHECK(c.base_url == "/gw/");
  CHECK(c.token.size() == 48);
  CHECK(c.token_generated);
  CHECK(c.allow_env == std::set<std::string>{"A", "B"});
  CHECK(c.data_dir.front() == '/');
}

TEST_CASE("precedence: flags over env over file", "[gateway]") {
  const char* path = "/tmp/cg-config-test.json";
  std::ofstream(path) << R"({"port": 1234, "token": "fromfile", "allow_env": ["X"], "ip": "127.0.0.2"})";
  ::setenv("CELLGATE_TOKEN", "fromenv", 1);
  auto c = load({"--config", path, "--ip", "127.0.0.3"});
  CHECK(c.port == 1234);
  CHECK(c.token == "fromenv");
  CHECK(c.ip == "127.0.0.3");
  CHECK(c.allow_env.count("X") == 1);
  ::unsetenv("CELLGATE_TOKEN");
  ::unlink(path);
}

TEST_CASE("bad configuration fails with one clear line", "[gateway]") {
  CHECK_THROWS_WITH(load({"--port", "x"}), Catch::Contains("--port"));
  CHECK_THROWS_WITH(load({"--nope", "1"}), Catch::Contains("unknown option --nope"));
  CHECK_THROWS_WITH(load({"--nope"}), Catch::Contains("unknown option --nope"));
  CHECK_THROWS_WITH(load({"--spawner", "docker"}), Catch::Contains("jail or plain"));
  CHECK_THROWS_WITH(load({"--kernel-memory", "5X"}), Catch::Contains("suffix"));
  CHECK_THROWS_WITH(load({"--port"}), Catch::Contains("needs a value"));
  const char* path = "/tmp/cg-config-bad.json";
  std::ofstream(path) << R"({"prot": 1})";
  CHECK_THROWS_WITH(load({"--config", path}), Catch::Contains("unknown key 'prot'"));
  std::ofstream(path) << "[1,2]";
  CHECK_THROWS_WITH(load({"--config", path}), Catch::Contains("not a JSON object"));
  CHECK_THROWS_WITH(load({"--config", "/nonexistent.json"}), Catch::Contains("cannot read"));
  ::unlink(path);
}

TEST_CASE("sizes accept suffixes", "[gateway]") {
  auto c = load({"--kernel-memory", "512M", "--kernel-cpus", "0.5", "--max-body", "1K"});
  CHECK(c.limits.memory_bytes == 512ull << 20);
  CHECK(c.limits.cpus == 0.5);
  CHECK(c.max_body_bytes == 1024);
}
