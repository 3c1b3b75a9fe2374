// SPDX-License-Identifier: BSD-3-Clause
// egress_options: cellgate-egress's command line.
#include "egress/egress_options.h"

#include <catch2/catch.hpp>

#include <vector>

using namespace cellgate::egress;

namespace {
cellgate::common::Result<EgressOptions> parse(std::vector<const char*> args) {
  args.insert(args.begin(), "cellgate-egress");
  return parse_egress_options(static_cast<int>(args.size()), args.data());
}
}  // namespace

TEST_CASE("cellgate-egress options parse, and errors are one line", "[egress]") {
  auto o = parse({"--control", "/run/e.sock", "--hosts", "/h", "--no-dns", "--deny", "0.0.0.0:8888=the gateway",
                  "--deny=[::1]:8888", "--limits", R"({"open": 3, "bytes_in": "1M"})", "--ip-rules", "--control-uid", "1000"});
  REQUIRE(o);
  CHECK_FALSE(o->dns);
  CHECK(o->ip_rules);
  REQUIRE(o->denied.size() == 2);
  CHECK(o->denied[0].what == "the gateway");
  CHECK(o->denied[1].address.is_v6());
  CHECK(o->limits.open == 3);
  CHECK(o->limits.bytes_in == 1ULL << 20);
  CHECK(o->control_uids == std::vector<uid_t>{1000});
  CHECK_FALSE(parse({}));
  CHECK_FALSE(parse({"--control", "/e", "--deny", "example.com:80"}));
  auto lim = parse({"--control", "/e", "--limits", R"({"rate": -1})"});
  REQUIRE_FALSE(lim);
  CHECK(lim.error().message.rfind("--limits rate: ", 0) == 0);
  auto unknown = parse({"--control", "/e", "--fast"});
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().message == "unknown option '--fast' (see --help)");
  for (const char* opt : {"--control", "--hosts", "--no-dns", "--ca-dir", "--upstream-ca", "--secrets", "--audit-log",
                          "--deny", "--ip-rules", "--limits", "--max-open", "--user", "--control-uid"}) {
    INFO(opt);
    CHECK(egress_help_text().find(opt) != std::string::npos);
  }
}
