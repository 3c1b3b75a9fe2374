// SPDX-License-Identifier: BSD-3-Clause
// egress_env: the jail options and environment that route a kernel through cellgate-egress.
#include "kernel-launcher/egress_env.h"

#include <catch2/catch.hpp>

#include <algorithm>

#include "kernel-launcher/jail_args.h"

using namespace cellgate::launcher;

TEST_CASE("no egress endpoint: no options, no variables (loopback only)", "[launcher]") {
  EgressEndpoint none;
  CHECK(egress_jail_args(none).empty());
  CHECK(egress_env(none).empty());
}

TEST_CASE("an egress endpoint: proxy variables in both cases, the bundle bound and named", "[launcher]") {
  EgressEndpoint e{"/run/cellgate/egress.sock", 3128, "/var/lib/cellgate/egress-ca/bundle.pem"};
  auto env = egress_env(e);
  for (const char* k : {"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"}) CHECK(env.at(k) == "http://127.0.0.1:3128");
  CHECK(env.at("no_proxy") == "localhost,127.0.0.1,::1");
  for (const char* k : {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "PIP_CERT", "GIT_SSL_CAINFO"})
    CHECK(env.at(k) == kEgressCaPath);
  CHECK(egress_jail_args(e) == std::vector<std::string>{"--egress", "/run/cellgate/egress.sock", "--egress-port", "3128",
                                                        "--ro-bind", "/var/lib/cellgate/egress-ca/bundle.pem:/etc/cellgate/egress-ca.pem"});
  EgressEndpoint no_ca{"/e.sock", 8080, ""};
  CHECK(egress_env(no_ca).count("SSL_CERT_FILE") == 0);
  CHECK(egress_jail_args(no_ca).size() == 4);

  SpawnRequest req;
  req.kernel_id = "k1";
  req.argv = {"python3"};
  req.egress = e;
  auto argv = jail_args(req, {}, 3);
  auto at = std::find(argv.begin(), argv.end(), "--egress");
  REQUIRE(at != argv.end());
  CHECK(*(at + 1) == "/run/cellgate/egress.sock");
  CHECK(std::find(argv.begin(), argv.end(), "--") > at);  // before the command
}
