// SPDX-License-Identifier: BSD-3-Clause
// apply_creds: capabilities, uid/gid, no_new_privs and seccomp in the child.
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "isolation/child/child_steps.h"

namespace cellgate::isolation::child {

int apply_drop_privileges(const ChildPlan& plan, Stage* stage) noexcept {
  *stage = Stage::kCapabilities;
  // The bounding set must go first: dropping it needs CAP_SETPCAP, which setresuid removes.
  for (int cap = 0; cap <= plan.last_cap; ++cap) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL) return errno;
  }
  *stage = Stage::kSetgroups;
  if (setgroups(0, nullptr) < 0) return errno;
  *stage = Stage::kSetgid;
  if (setresgid(plan.gid, plan.gid, plan.gid) < 0) return errno;
  *stage = Stage::kSetuid;
  // Leaving uid 0 (without SECBIT_KEEP_CAPS) clears the permitted and effective sets
  // (capabilities(7) "Effect of user ID changes on capabilities").
  if (setresuid(plan.uid, plan.uid, plan.uid) < 0) return errno;
  *stage = Stage::kCapabilities;
  // The inheritable set survives the uid change; clear it, then the ambient set.
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capset, &header, data) < 0) return errno;
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL) return errno;
  return 0;
}

int apply_seccomp(const ChildPlan& plan, Stage* stage) noexcept {
  *stage = Stage::kNoNewPrivs;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) return errno;
  *stage = Stage::kSeccomp;
  if (plan.filter_len == 0) return 0;
  sock_fprog prog{plan.filter_len, const_cast<sock_filter*>(plan.filter)};
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0) return errno;
  return 0;
}

int apply_close_fds_except(const int* keep, size_t n) noexcept {
  // keep[] is small and unsorted: close the gaps between consecutive kept fds.
  unsigned lo = 3;
  for (;;) {
    unsigned next = ~0U;
    for (size_t i = 0; i < n; ++i) {
      if (keep[i] >= 0 && static_cast<unsigned>(keep[i]) >= lo && static_cast<unsigned>(keep[i]) < next)
        next = static_cast<unsigned>(keep[i]);
    }
    if (next == ~0U) return close_range(lo, ~0U, 0) < 0 ? errno : 0;
    if (next > lo && close_range(lo, next - 1, 0) < 0) return errno;
    lo = next + 1;
  }
}

}  // namespace cellgate::isolation::child
