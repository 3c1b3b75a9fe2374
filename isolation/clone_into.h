// SPDX-License-Identifier: BSD-3-Clause
// clone_into: clone3(2) with a pidfd, the child born in the jail's cgroup v2 dir (CLONE_INTO_CGROUP)
// when it has one: counted by the cgroup's limits from its first instruction, no cgroup.procs write.
// Used by the jail's spawn and by --join.
#pragma once

#include <cstdint>
#include <string>

#include "common/unique_fd.h"

namespace cellgate::isolation {

// The cgroup v2 dir to clone into (O_DIRECTORY); invalid when unified is "" or cannot be opened, and
// the child is then placed by writing cgroup.procs.
common::UniqueFd open_cgroup_dir(const std::string& unified);

struct Cloned {
  long pid = -1;        // the child's pid in the parent, 0 in the child, -1 with errno set on failure
  int pidfd = -1;       // the parent's pidfd for the child
  bool placed = false;  // born in the v2 dir: CLONE_INTO_CGROUP took
};

// clone3 with flags | CLONE_PIDFD and SIGCHLD, plus CLONE_INTO_CGROUP when cgroup_dir is valid. A
// failure with CLONE_INTO_CGROUP is retried without it (kernels before 5.7 lack it), unless
// keep(errno) says that failure has another cause (the pids limit: EAGAIN). Returns twice, as
// fork(2) does; the child holds no state of this call. runs in: the helper's only thread.
Cloned clone_into_cgroup(uint64_t flags, int cgroup_dir, bool (*keep)(int err) = nullptr) noexcept;

}  // namespace cellgate::isolation
