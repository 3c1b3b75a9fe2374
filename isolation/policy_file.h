// SPDX-License-Identifier: BSD-3-Clause
// policy_file: the JSON jail policy (seccomp choices, limits, binds, env), layered on the default.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "isolation/jail_options.h"

namespace cellgate::isolation {

struct Policy {
  std::string seccomp_base = "docker-default";
  // Syscall names in the order the layers gave them; see effective_syscalls().
  std::vector<std::pair<std::string, bool>> seccomp_changes;  // (name, allowed?)
  Limits limits;
  std::string hostname = "sandbox";
  mode_t umask = 022;
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<BindSpec> ro_binds;
  std::vector<std::string> etc_binds;     // bound read-only at the same path when present
  bool usr_etc_links = true;              // also bind the /etc entries symlinks under /usr lead to
  std::vector<std::string> cache_binds;   // same, for caches (fontconfig)
  std::string mpl_cache_dir;              // fontlist-*.json copied into MPLCONFIGDIR
  std::string file_text;                  // the policy file's text layered on the default ("": none)
};

// The built-in default policy (isolation/policies/default.json, embedded at build time).
std::string_view builtin_policy_json();
// Parses one policy document and layers it over `base` (lists add, scalars replace; within
// one document `deny` is applied after `allow`). Untrusted text: never throws.
common::Result<Policy> layer_policy(Policy base, std::string_view json_text);
// The built-in default alone.
common::Result<Policy> default_policy();
// The default with FILE layered on (FILE ≤ 1 MiB).
common::Result<Policy> load_policy(const std::string& path);

// A jail records the policy it was built with next to its status file, so that a command joined to
// it later (--join) gets exactly that policy: not whatever the file holds by then, nor the caller's.
std::string recorded_policy_path(const std::string& status_file);
// Writes file_text there (an empty document for the default). False on error.
bool record_policy(const Policy& policy, const std::string& status_file);
// The policy a running jail recorded. kBadRequest when there is none (a jail of an older helper).
common::Result<Policy> load_recorded_policy(const std::string& status_file);

}  // namespace cellgate::isolation
