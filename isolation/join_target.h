// SPDX-License-Identifier: BSD-3-Clause
// join_target: which running jail `--join STATUS_FILE` enters, validated against pid reuse.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/unique_fd.h"

namespace cellgate::isolation {

// The fields of a {"state":"running",...} status document that a join needs.
struct JoinStatus {
  pid_t helper_pid = 0;
  pid_t init_pid = 0;
  uint64_t host_uid = 0;  // host uid of `sandbox` in that jail (init runs as it)
  std::string cgroup;     // unified/v2 dir, "" for a jail without one
};

// Parses the status file's text (untrusted: never throws). Errors: not JSON, not "running",
// missing or out-of-range fields.
common::Result<JoinStatus> parse_join_status(std::string_view json_text);
// Checks /proc/<init>/status text: PPid is the helper, the last NSpid is 1 (the init of its own
// pid namespace, nested below ours) and every Uid is host_uid.
common::Status check_init_status(std::string_view proc_status, const JoinStatus& status);

// A validated running jail: the init's pidfd pins it (a reused pid can no longer be confused
// with it: the checks ran while that pidfd's process was alive).
struct JoinTarget {
  JoinStatus status;
  common::UniqueFd init_pidfd;
};
// Reads STATUS_FILE (regular file, ≤ 64 KiB, no symlink), opens the init's pidfd, checks
// /proc/<init>/status, that the helper runs a program of our name, that the init is in
// another user and pid namespace, and that it is still alive afterwards.
common::Result<JoinTarget> open_join_target(const std::string& status_file);

}  // namespace cellgate::isolation
