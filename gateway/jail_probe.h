// SPDX-License-Identifier: BSD-3-Clause
// jail_probe: whether a jail can start on this host now (for /readyz), by starting a tiny one.
#pragma once

#include <chrono>
#include <string>

#include "common/result.h"

namespace cellgate::gateway {

struct JailProbeOptions {
  std::string helper;       // cellgate-jail
  std::string policy;       // --jail-policy ("" = built-in)
  std::chrono::seconds timeout{20};
};

// Runs `cellgate-jail --memory 64M --pids 16 -- /usr/bin/true` and waits for it (blocking: call it
// on the offload pool). Ok when it exits 0; else the helper's first line of complaint, or the
// timeout (it is then killed). Its stdout and stderr are discarded past that line.
common::Status probe_jail(const JailProbeOptions& options);

}  // namespace cellgate::gateway
