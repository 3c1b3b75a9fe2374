// SPDX-License-Identifier: BSD-3-Clause
// zygote_protocol: the fork server's request encoding and the commands it agrees to run.
#include "isolation/zygote_protocol.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace cellgate::isolation;

TEST_CASE("a zygote request round-trips its arguments, empty ones included", "[isolation]") {
  std::vector<std::string> args = {"--name", "k1", "--env", "A=", "", "--", "/usr/bin/python3"};
  auto back = decode_zygote_request(encode_zygote_request(args));
  REQUIRE(back);
  CHECK(*back == args);
}

TEST_CASE("malformed zygote requests are refused", "[isolation]") {
  CHECK_FALSE(decode_zygote_request(""));
  CHECK_FALSE(decode_zygote_request("CGZ2\0x\0"));
  CHECK_FALSE(decode_zygote_request(std::string(kZygoteMagic)));  // no argument
  CHECK_FALSE(decode_zygote_request(std::string(kZygoteMagic) + "unterminated"));
  std::string big(kZygoteMagic);
  big += std::string(kZygoteMaxRequest, 'a') + '\0';
  CHECK_FALSE(decode_zygote_request(big));
}

TEST_CASE("the fork server runs exactly the Debian ipykernel command", "[isolation]") {
  CHECK(zygote_can_run({"/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "/run/cellgate/k/x/connection.json"}));
  CHECK_FALSE(zygote_can_run({"python3", "-m", "ipykernel_launcher", "-f", "/c.json"}));
  CHECK_FALSE(zygote_can_run({"/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "c.json"}));
  CHECK_FALSE(zygote_can_run({"/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "/c.json", "--debug"}));
  CHECK_FALSE(zygote_can_run({"/usr/bin/python3", "-c", "import os", "-f", "/c.json"}));
  CHECK_FALSE(zygote_can_run({"/bin/sh", "-m", "ipykernel_launcher", "-f", "/c.json"}));
  CHECK_FALSE(zygote_can_run({}));
}
