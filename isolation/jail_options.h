// SPDX-License-Identifier: BSD-3-Clause
// jail_options: cellgate-jail's command line (pure parsing, no side effects).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/size_text.h"

namespace cellgate::isolation {

// Environment entries a jail takes at most (--env and --env-file together).
inline constexpr size_t kMaxEnvEntries = 256;

struct BindSpec {
  std::string source;
  std::string target;
};

// Limits that may come from the command line or the policy file; unset = take the next layer.
struct Limits {
  std::optional<uint64_t> memory;    // bytes
  std::optional<uint64_t> pids;
  std::optional<double> cpu;         // cores
  std::optional<uint64_t> nofile;
  std::optional<uint64_t> fsize;     // bytes
  std::optional<uint64_t> tmp_size;  // bytes, /tmp and /dev/shm each
};

struct JailOptions {
  std::string name;                 // default: "jail-<pid>" (filled by the caller)
  std::string policy_file;          // empty: the built-in default policy
  std::string workspace;            // empty: a tmpfs at /workspace
  std::vector<std::string> bind_same;
  std::vector<BindSpec> ro_binds;
  std::vector<std::pair<std::string, std::string>> env;
  std::string env_file;             // NUL-separated K=V entries, placed before --env (env.h read_env_file)
  std::optional<std::string> hostname;
  Limits limits;
  uint64_t kernel_log_bytes = 1 << 20;  // the relayed stdout/stderr log keeps about this much
  uint64_t uid_start = 200000;
  uint64_t uid_count = 67108864;  // 1024 slots: one per live jail (issue #8: hundreds of kernels)
  std::string status_file;
  int ready_fd = -1;
  std::string cgroup_root;          // empty: /sys/fs/cgroup
  std::string cgroup_owner;         // --cgroup-owner: <ctl>/cellgate/<owner>/<name>; empty: cellgate/<name>
  uint32_t kernels_cpu_weight = 0;  // --kernels-cpu-weight: cpu.weight of <ctl>/cellgate; 0 = leave it
  bool no_cgroup = false;
  std::string join;                 // --join STATUS_FILE: run the command in that running jail
  std::string attach_workspace;     // --attach-workspace STATUS_FILE: mount --workspace into that jail
  std::string egress_socket;        // --egress SOCKET: the egress proxy's control socket; empty: no network
  uint16_t egress_port = 3128;      // --egress-port: where the proxy listens inside the jail
  std::string egress_attach;        // --egress-attach STATUS_FILE: hand that jail's listener to --egress
  bool memory_merge = false;        // --memory-merge on: the kernel's memory may be merged (KSM)
  bool help = false;
  std::vector<std::string> command;
};

// Parses argv (argv[0] is skipped). Errors carry a one-line message for exit code 125.
common::Result<JailOptions> parse_options(int argc, const char* const* argv);
// The --help text, documenting every option.
std::string help_text();

// "512M", "1G", "4096", "1.5G" → bytes (common/size_text.h).
using common::parse_size;
bool parse_uint(std::string_view text, uint64_t& out);
// A jail name: [a-zA-Z0-9_-]{1,64}.
bool valid_name(std::string_view name);
// Splits SRC[:DST]; DST defaults to SRC; both must be absolute.
bool parse_bind(std::string_view text, BindSpec& out);

}  // namespace cellgate::isolation
