// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <fstream>
#include <set>
#include <sstream>

#include "kernel-launcher/connection_info.h"

using namespace cellgate::launcher;

TEST_CASE("ipc connection info has a 256-bit key and short paths", "[launcher]") {
  auto info = make_ipc_connection("/run/cellgate/k/abc", "python3");
  REQUIRE(info.has_value());
  CHECK(info->key.size() == 64);
  CHECK(info->endpoint(Channel::kShell) == "ipc:///run/cellgate/k/abc/k-1");
  CHECK(info->endpoint(Channel::kHb) == "ipc:///run/cellgate/k/abc/k-5");
  auto other = make_ipc_connection("/run/cellgate/k/abc", "python3");
  CHECK(other->key != info->key);
}

TEST_CASE("ipc paths over 107 bytes are refused", "[launcher]") {
  auto info = make_ipc_connection("/" + std::string(110, 'a'), "python3");
  REQUIRE_FALSE(info.has_value());
  CHECK(info.error().message.find("107") != std::string::npos);
}

TEST_CASE("tcp connection info binds five distinct ports", "[launcher]") {
  auto info = make_tcp_connection("127.0.0.1", "python3");
  REQUIRE(info.has_value());
  std::set<int> ports(info->ports.begin(), info->ports.end());
  CHECK(ports.size() == 5);
  CHECK(info->endpoint(Channel::kIopub).rfind("tcp://127.0.0.1:", 0) == 0);
}

TEST_CASE("connection files are written 0600 and parse back", "[launcher]") {
  auto info = make_ipc_connection("/tmp/x", "k");
  std::string path = "/tmp/cg-conn-test.json";
  REQUIRE(write_connection_file(info.value(), path).has_value());
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str());
  CHECK(j["transport"] == "ipc");
  CHECK(j["key"] == info->key);
  CHECK(j["signature_scheme"] == "hmac-sha256");
  CHECK(j["shell_port"] == 1);
  ::unlink(path.c_str());
}
