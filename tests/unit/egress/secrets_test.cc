// SPDX-License-Identifier: BSD-3-Clause
// secrets: the file format, the check of a policy's references, and expansion.
#include "egress/secrets.h"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

using namespace cellgate::egress;

TEST_CASE("secrets expand in header templates and unknown names are refused", "[egress]") {
  auto s = Secrets::parse(R"({"api": "k-123", "user.pw": "p"})", "s.json");
  REQUIRE(s);
  CHECK(s->expand("Bearer ${secret:api}") == "Bearer k-123");
  CHECK(s->expand("${secret:api}:${secret:user.pw}!") == "k-123:p!");
  CHECK(s->expand("no refs") == "no refs");
  auto p = parse_policy(nlohmann::json::parse(R"({"mode": "allowlist", "allow": [
      {"host": "a.test", "headers": {"X-Key": "${secret:api}"}}, {"host": "b.test", "headers": {"X": "${secret:gone}"}}]})"));
  REQUIRE(p);
  auto c = s->check(*p, "network");
  REQUIRE_FALSE(c);
  CHECK(c.error().message == "network.allow[1].headers.X: unknown secret 'gone'");
  CHECK_FALSE(Secrets::parse("[]", "s"));
  CHECK_FALSE(Secrets::parse(R"({"a b": "x"})", "s"));
  CHECK_FALSE(Secrets::parse(R"({"a": "x\ny"})", "s"));
  CHECK_FALSE(Secrets::parse(R"({"a": 1})", "s"));
}

TEST_CASE("a secrets file readable by others is refused", "[egress]") {
  char dir[] = "/tmp/egress-secrets-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/s.json";
  std::ofstream(path) << R"({"a": "b"})";
  ::chmod(path.c_str(), 0644);
  auto open = Secrets::load(path);
  REQUIRE_FALSE(open);
  CHECK(open.error().message.find("readable by others") != std::string::npos);
  ::chmod(path.c_str(), 0600);
  CHECK(Secrets::load(path));
  ::unlink(path.c_str());
  ::rmdir(dir);
}
