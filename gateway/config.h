// SPDX-License-Identifier: BSD-3-Clause
// config: `cellgate serve` options from defaults, a JSON config file, CELLGATE_* env vars and flags.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/config_error.h"
#include "kernel-launcher/spawner.h"

namespace cellgate::journal {
struct JournalConfig;
}

namespace cellgate::gateway {

using common::ConfigError;

struct Config {
  std::string ip = "127.0.0.1";
  int port = 8888;
  std::string base_url = "/";                // always starts and ends with '/'
  std::string token;                         // empty before load(): generated if not given
  std::string token_file;                    // --token-file: the token's file (read by load)
  bool token_generated = false;
  std::string data_dir = "./data";           // made absolute
  std::string store_dir;                     // "" = <data_dir>/store; set: may be shared by cluster nodes (made absolute)
  std::string database;                      // "" = SQLite in data_dir; postgresql://… (docs/cluster.md)
  std::string runtime_dir;                   // default /run/cellgate (root) or /tmp/cellgate-<uid>
  bool runtime_dir_default = false;          // set by finish(): no --runtime-dir was given
  std::string ipc_tmpfs = "auto";            // auto | on | off: tmpfs on <runtime_dir>/k and /s (memory_dir.h)
  uint64_t kernel_log_bytes = 1ull << 20;    // each kernel's stdout/stderr log keeps about this much
  int kernels_cpu_weight = 50;               // cpu.weight of the kernels' cgroup/cellgate against the gateway's; 0 = leave it
  std::vector<std::string> kernelspec_dirs;
  std::string default_kernel = "python3";
  std::vector<std::string> allow_origins;    // "*" = any
  std::set<std::string> allow_env;           // non-KERNEL_ names clients may pass
  std::string spawner = "jail";              // jail | plain
  std::string jail_helper;                   // default: cellgate-jail beside the cellgate binary
  bool fork_server = true;                   // ipykernels from cellgate-zygote (jail spawner only)
  std::string zygote_binary;                 // default: cellgate-zygote beside the cellgate binary
  int fork_server_timeout_s = 10;            // a start waits this long for the fork server's answer; then 503
  std::string jail_policy;                   // policy file for every kernel ("" = built-in default)
  // Kernel memory merging (KSM, README "Kernel memory merging"): off by default, a side channel between
  // tenants. On: every kernel is marked mergeable and ksmd runs host-wide, scanning at most this rate.
  bool kernel_memory_merge = false;
  uint64_t kernel_memory_merge_rate = 5000;  // pages a second ksmd scans (KSM's own default: 100 per 20 ms)
  std::string transport = "ipc";
  std::string log_level = "info";
  std::string metrics_token;                 // besides an admin's token, this one may read /metrics
  bool metrics_per_user = false;             // /metrics: the cellgate_user_* families (a label per user)
  int events_buffer = 4096;                  // GET /api/events: events kept for Last-Event-ID resume
  launcher::Limits limits;                   // per-kernel defaults
  std::string certfile;                      // PEM chain; with keyfile, serve HTTPS/WSS only
  std::string keyfile;
  uint64_t max_header_bytes = 64ull << 10;
  uint64_t max_body_bytes = 64ull << 20;
  uint64_t max_ws_message_bytes = 256ull << 20;
  uint64_t max_kernel_message_bytes = 512ull << 20;  // kernel -> gateway, per message
  uint64_t kernel_output_rate = 0;  // iopub bytes per second read from one kernel; 0 = unpaced (a classroom sets 16M)
  uint64_t kernel_read_budget = 0;  // all kernels' partly received large messages; 0 = max(1G, 2 × the above)
  uint64_t ws_queue_bytes = 64ull << 20;     // per WebSocket; see README "slow clients"
  uint64_t ws_read_per_user_bytes = 0;       // one user's client messages being read at once; 0 = 2 × max_ws_message_bytes
  uint64_t replay_bytes = 16ull << 20;       // per offline session_id
  uint64_t execute_output_bytes = 1ull << 20;  // agent API: outputs kept per execute
  int execute_limit_s = 0;                    // per-execute wall-clock limit; 0 = off
  int auth_failures_per_minute = 100;        // per client address; past it 429 for a minute
  int max_kernels = 0;
  int max_kernels_per_user = 0;               // default quota; a user's own limit overrides it
  int max_connections_per_user = 64;          // open WebSockets per user; a user's own limit overrides it; 0 = none
  int max_sessions_per_user = 256;            // session rows (/api/sessions) per user; 0 = none
  int max_artifacts_per_user = 1000;          // published artifacts per user (their bytes: store_bytes); 0 = none
  uint64_t workspace_bytes = 10ull << 30;     // per workspace
  uint64_t user_workspace_bytes = 0;          // per user, all their workspaces on the volume together; 0 = no cap
  uint64_t workspace_files = 200000;
  uint64_t store_bytes = 20ull << 30;         // per user: what all their snapshots may hold in the store; 0 = no cap
  std::string workspace_volume = "auto";      // auto | on | off: workspace trees in a btrfs volume with live quotas
  uint64_t workspace_volume_bytes = 0;        // its size when made or grown; 0 = volume.h's default (16G)
  size_t snapshot_keep = 20;                  // automatic snapshots kept per workspace (labelled: all)
  int cull_idle_timeout_s = 0;                // 0 = never cull
  int cull_interval_s = 60;
  bool cull_busy = false;
  bool cull_connected = false;
  bool shutdown_kernels_on_exit = false;      // default: kernels outlive the gateway and are re-adopted
  // Seed notebooks (README "Seed notebooks").
  std::string seed_notebook;                  // run on every new kernel of the notebook's language
  int seed_timeout_s = 120;                   // the whole seed, per launch
  // notebook-http mode (README "notebook-http"): "" = off.
  std::string notebook_http;
  std::string notebook_http_kernel;           // "" = the notebook's kernelspec, else default_kernel
  int notebook_http_kernels = 2;              // kernels serving the endpoints
  int notebook_http_timeout_s = 30;           // per request, all its cells together
  uint64_t notebook_http_max_body = 1ull << 20;
  int notebook_http_queue = 64;               // requests waiting for a kernel; past it 503
  bool notebook_http_public = false;          // true: endpoints need no token
  int kernel_start_timeout_s = 60;           // also the longest wait for a start slot
  // Kernel starts at once (start_gate.h): past them a start waits in the queue, past that 503.
  int max_starting = 8;
  int max_starting_per_user = 4;
  int start_queue = 64;
  int start_queue_per_user = 16;
  int heartbeat_timeout_s = 30;               // no heartbeat reply this long: the kernel is restarted
  int pause_after_s = 0;                      // freeze kernels idle this long; 0 = never (default)
  launcher::Freezer freezer = launcher::Freezer::kAuto;
  std::map<std::string, int> pool;            // kernelspec → warm kernels kept ready for POST /api/kernels
  uint64_t pool_max_memory = 0;               // memory the pool's idle kernels may hold together; 0 = no cap
  int pool_concurrency = 1;                   // pool kernels started at once (its CPU budget)
  // The egress proxy (README "Network policy"): on starts cellgate-egress with the gateway (jail
  // spawner only); off: every kernel has loopback only, and a policy other than none is refused.
  bool egress = true;
  std::string egress_binary;                  // default: cellgate-egress beside the cellgate binary
  std::string egress_hosts;                   // its --hosts FILE: names resolved before DNS
  bool egress_dns = true;                     // false: --egress-hosts is the only source of addresses
  std::string egress_secrets;                 // its --secrets FILE: what ${secret:NAME} in header rules stands for
  std::string egress_upstream_ca;             // its --upstream-ca FILE: CAs it trusts upstream besides the system's
  bool egress_ip_rules = false;               // accept {"cidr": ...} rules
  std::string egress_limits;                  // its --limits JSON: per-kernel defaults
  int ws_ping_interval_s = 30;
  int shutdown_grace_ms = 3000;
  // A cluster of nodes sharing one PostgreSQL database (docs/cluster.md). Off unless --cluster-listen.
  std::string node_id;                        // "" = one machine; in a cluster: --node-id, else the host name
  std::string cluster_listen;                 // ADDR:PORT of the internal mutual-TLS listener
  std::string cluster_advertise;              // HOST:PORT the other nodes dial (default: cluster_listen)
  std::string cluster_cert;                   // PEM: this node's certificate (CN = node id), its key, the CA
  std::string cluster_key;
  std::string cluster_ca;
  int node_lease_s = 10;                      // a node not renewed this long is lost
  bool clustered() const { return !cluster_listen.empty(); }
  // The execution journal (README "The journal").
  bool journal = true;
  uint64_t journal_bytes = 256ull << 20;      // per user, all their kernels' journals together
  int journal_days = 30;
  uint64_t journal_entry_bytes = 1ull << 20;  // code and outputs kept per entry
};

// Parses argv (after the subcommand), env (CELLGATE_*) and the --config file. Precedence: flags, then env,
// then the file, then defaults. Throws ConfigError with a one-line message; prints help and exits on --help.
Config load_config(int argc, char** argv);

// The --help text: every option, its env var and its default.
std::string config_help();

// The journal's part of the config.
journal::JournalConfig journal_config(const Config& config);

}  // namespace cellgate::gateway
