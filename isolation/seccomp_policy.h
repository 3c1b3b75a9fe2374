// SPDX-License-Identifier: BSD-3-Clause
// seccomp_policy: build the filter with libseccomp in the parent, export it as BPF.
#pragma once

#include <linux/filter.h>

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "isolation/policy_file.h"

namespace cellgate::isolation {

// The effective syscall sets after layering: `allow` are unconditional allows, `deny` return
// EPERM, `explicit_allow` are names a policy allowed on purpose (they lose their argument
// conditions). Everything else returns ENOSYS; foreign architectures (i386, x32) kill.
struct SyscallSets {
  std::set<std::string> allow;
  std::set<std::string> deny;
  std::set<std::string> explicit_allow;
};
SyscallSets effective_syscalls(const Policy& policy);

// Every name the policy allows or denies is a syscall libseccomp knows (a config check, exit 125).
common::Status check_syscall_names(const Policy& policy);
// Builds and exports the BPF program. Every libseccomp return code is checked: an unknown
// name in the policy or a refused rule is an error (never a silently missing rule).
common::Result<std::vector<sock_filter>> build_seccomp_bpf(const Policy& policy);
// build_seccomp_bpf through a cache: <cache_dir>/<key>.bpf (dir 0700, files written atomically).
// Compiling takes ~2 ms per jail; the key covers the effective syscall sets, this code's rule
// format, the libseccomp version and the running binary (inode, size, mtime). Any cache problem
// falls back to building.
common::Result<std::vector<sock_filter>> cached_seccomp_bpf(const Policy& policy, const std::string& cache_dir);
std::string seccomp_cache_key(const Policy& policy);
// The same filter as libseccomp's pseudo-filter-code text (for tests and --help debugging).
common::Result<std::string> build_seccomp_pfc(const Policy& policy);

// (mask, value) pairs whose MASKED_EQ matches cover exactly the 32-bit values NOT in
// `excluded`: libseccomp allows one comparison per argument per rule, so "cmd not in {a, b}"
// becomes a prefix cover of the complement.
std::vector<std::pair<uint32_t, uint32_t>> complement_cover(const std::vector<uint32_t>& excluded);

}  // namespace cellgate::isolation
