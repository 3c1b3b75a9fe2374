// SPDX-License-Identifier: BSD-3-Clause
// egress_env: what routes a jailed kernel through the egress proxy — its jail options and environment.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cellgate::launcher {

// Where the proxy's trust bundle (the system store plus the interception CA) appears in a jail.
inline constexpr const char* kEgressCaPath = "/etc/cellgate/egress-ca.pem";

struct EgressEndpoint {
  std::string control_socket;  // cellgate-egress --control; empty: no network (loopback only)
  uint16_t port = 3128;        // the proxy's port on the jail's 127.0.0.1
  std::string ca_bundle;       // host file bound read-only at kEgressCaPath; empty: none
  bool enabled() const { return !control_socket.empty(); }
};

// --egress, --egress-port and the bundle's --ro-bind; nothing when not enabled.
std::vector<std::string> egress_jail_args(const EgressEndpoint& egress);

// HTTP_PROXY, HTTPS_PROXY and NO_PROXY in both cases (curl reads only a lowercase http_proxy),
// with NO_PROXY naming the jail's own loopback; and, with a bundle, the CA variables of OpenSSL,
// requests, curl, pip, git and node. Empty when not enabled.
std::map<std::string, std::string> egress_env(const EgressEndpoint& egress);

}  // namespace cellgate::launcher
