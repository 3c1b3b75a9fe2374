// SPDX-License-Identifier: BSD-3-Clause
// egress_options: cellgate-egress's command line (pure parsing, no side effects).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "egress/decision.h"
#include "egress/kernel_table.h"

namespace cellgate::egress {

struct EgressOptions {
  std::string control;            // unix socket the gateway and cellgate-jail talk to (required)
  std::string hosts_file;         // --hosts: names resolved before (or instead of) DNS
  bool dns = true;                // --no-dns: the hosts file is the only source
  std::string ca_dir;             // interception CA; empty: no header rules
  std::string system_bundle = "/etc/ssl/certs/ca-certificates.crt";
  std::string upstream_ca;        // extra CAs the proxy trusts upstream (tests' servers)
  std::string secrets_file;
  std::string audit_log;
  uint64_t audit_max_bytes = 64ULL << 20;
  std::string state_dir;          // --state-dir: counters that survive a restart; empty: none
  std::vector<DeniedEndpoint> denied;
  bool ip_rules = false;
  EffectiveLimits limits;         // per-kernel defaults
  uint64_t max_open = 4096;
  std::string user = "199999";    // who the proxy runs as after setup when started as root
  std::vector<uid_t> control_uids;  // peers allowed on the control socket besides root and us
  std::string log_level = "info";
  pid_t parent_pid = 0;           // --parent-pid: exit when that process (the gateway) dies
  bool help = false;
};

// Errors carry one line for exit code 2.
common::Result<EgressOptions> parse_egress_options(int argc, const char* const* argv);
std::string egress_help_text();

}  // namespace cellgate::egress
