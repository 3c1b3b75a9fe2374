// SPDX-License-Identifier: BSD-3-Clause
// clone_into: clone3(2) into the jail's cgroup v2 dir.
#include "isolation/clone_into.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace cellgate::isolation {

common::UniqueFd open_cgroup_dir(const std::string& unified) {
  if (unified.empty()) return common::UniqueFd();
  return common::UniqueFd(::open(unified.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

Cloned clone_into_cgroup(uint64_t flags, int cgroup_dir, bool (*keep)(int err)) noexcept {
  Cloned out;
  clone_args args{};
  args.flags = flags | CLONE_PIDFD;
  args.pidfd = reinterpret_cast<uint64_t>(&out.pidfd);
  args.exit_signal = SIGCHLD;
  if (cgroup_dir >= 0) {
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = static_cast<uint64_t>(cgroup_dir);
  }
  out.pid = ::syscall(SYS_clone3, &args, sizeof args);
  out.placed = out.pid >= 0 && cgroup_dir >= 0;
  if (out.pid < 0 && cgroup_dir >= 0 && !(keep && keep(errno))) {
    args.flags &= ~static_cast<uint64_t>(CLONE_INTO_CGROUP);
    out.pid = ::syscall(SYS_clone3, &args, sizeof args);
  }
  return out;
}

}  // namespace cellgate::isolation
