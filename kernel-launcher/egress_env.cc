// SPDX-License-Identifier: BSD-3-Clause
// egress_env: what routes a jailed kernel through the egress proxy — its jail options and environment.
#include "kernel-launcher/egress_env.h"

namespace cellgate::launcher {

std::vector<std::string> egress_jail_args(const EgressEndpoint& egress) {
  if (!egress.enabled()) return {};
  std::vector<std::string> args = {"--egress", egress.control_socket, "--egress-port", std::to_string(egress.port)};
  if (!egress.ca_bundle.empty()) args.insert(args.end(), {"--ro-bind", egress.ca_bundle + ":" + kEgressCaPath});
  return args;
}

std::map<std::string, std::string> egress_env(const EgressEndpoint& egress) {
  if (!egress.enabled()) return {};
  const std::string proxy = "http://127.0.0.1:" + std::to_string(egress.port);
  const std::string local = "localhost,127.0.0.1,::1";
  std::map<std::string, std::string> env = {
      {"HTTP_PROXY", proxy}, {"http_proxy", proxy}, {"HTTPS_PROXY", proxy}, {"https_proxy", proxy},
      {"NO_PROXY", local},   {"no_proxy", local},
  };
  if (!egress.ca_bundle.empty()) {
    for (const char* name : {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "PIP_CERT", "GIT_SSL_CAINFO",
                             "NODE_EXTRA_CA_CERTS"})
      env[name] = kEgressCaPath;
  }
  return env;
}

}  // namespace cellgate::launcher
