// SPDX-License-Identifier: BSD-3-Clause
// config: `cellgate serve` options from defaults, a JSON config file, CELLGATE_* env vars and flags.
#include "gateway/config.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "common/random.h"
#include "journal/journal.h"

namespace cellgate::gateway {
namespace {

using Setter = std::function<void(Config&, const std::string&)>;

struct Option {
  const char* name;   // flag without dashes, with '-'; env is CELLGATE_<UPPER_SNAKE>, config key snake_case
  const char* arg;    // "" for booleans
  bool repeatable;
  const char* help;
  Setter set;
};

uint64_t parse_size(const std::string& name, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  double n = std::strtod(v.c_str(), &end);
  if (end == v.c_str() || errno || n < 0) throw ConfigError(fmt::format("--{}: not a size: '{}'", name, v));
  std::string suffix(end);
  double mult = 1;
  if (suffix == "K" || suffix == "KiB" || suffix == "k") mult = 1024.0;
  else if (suffix == "M" || suffix == "MiB") mult = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "GiB") mult = 1024.0 * 1024 * 1024;
  else if (!suffix.empty()) throw ConfigError(fmt::format("--{}: unknown size suffix '{}'", name, suffix));
  // strtod also reads "inf", "nan" and "1e30": converting those to an integer is undefined behaviour.
  const double bytes = n * mult;
  if (!std::isfinite(bytes) || bytes >= 0x1p64) throw ConfigError(fmt::format("--{}: not a size: '{}'", name, v));
  return static_cast<uint64_t>(bytes);
}

long parse_int(const std::string& name, const std::string& v, long lo, long hi) {
  char* end = nullptr;
  errno = 0;
  long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end || errno || n < lo || n > hi)
    throw ConfigError(fmt::format("--{}: expected an integer in [{}, {}], got '{}'", name, lo, hi, v));
  return n;
}

bool parse_bool(const std::string& name, const std::string& v) {
  if (v == "true" || v == "1" || v == "yes") return true;
  if (v == "false" || v == "0" || v == "no") return false;
  throw ConfigError(fmt::format("--{}: expected true or false, got '{}'", name, v));
}

// The switches documented as on|off (true and false are taken too).
bool parse_on_off(const std::string& name, const std::string& v) {
  if (v == "on" || v == "true") return true;
  if (v == "off" || v == "false") return false;
  throw ConfigError(fmt::format("--{}: expected on or off, got '{}'", name, v));
}

// The kernel caps of a gateway started with none given (load_config; a Config built in code has none):
// no user can start kernels until the host falls over. An idle ipykernel holds about 60 MiB, so at
// 128 MiB a kernel the global cap leaves room for what they do; each kernel is also held by its own
// memory limit. Per user, more than a notebook user keeps open, few enough that one user cannot take
// the whole gateway.
constexpr int kAutoMaxKernels = -1;
constexpr int kDefaultMaxKernelsPerUser = 32;

int auto_max_kernels() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  const uint64_t memory = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
  return static_cast<int>(std::clamp<uint64_t>(memory / (128ull << 20), 16, 1 << 20));
}

const std::vector<Option>& options() {
  static const std::vector<Option> kOptions = {
      {"ip", "ADDR", false, "address to listen on (default 127.0.0.1)", [](Config& c, const std::string& v) { c.ip = v; }},
      {"port", "N", false, "port to listen on; 0 picks a free one (default 8888)",
       [](Config& c, const std::string& v) { c.port = static_cast<int>(parse_int("port", v, 0, 65535)); }},
      {"base-url", "PATH", false, "prefix of every route (default /)", [](Config& c, const std::string& v) { c.base_url = v; }},
      {"token", "T", false, "auth token; generated and printed when not given (prefer --token-file: a "
       "command line is visible to every local user)",
       [](Config& c, const std::string& v) { c.token = v; }},
      {"token-file", "FILE", false, "read the auth token from FILE (its first line; not with --token)",
       [](Config& c, const std::string& v) { c.token_file = v; }},
      {"data-dir", "DIR", false, "workspaces and gateway state (default ./data)",
       [](Config& c, const std::string& v) { c.data_dir = v; }},
      {"store-dir", "DIR", false,
       "the snapshot store (default <data-dir>/store); cluster nodes share one on a filesystem they all mount "
       "(NFS, CephFS, EFS), where every snapshot's manifest is published too, so that a workspace whose node "
       "was lost is restored on the node that starts its next kernel (docs/cluster.md)",
       [](Config& c, const std::string& v) {
         if (v.empty()) throw ConfigError("--store-dir: expected a directory");
         c.store_dir = v;
       }},
      {"database", "URL", false,
       "state database: postgresql://USER@HOST/DB (libpq URI; put the password in ~/.pgpass or PGPASSWORD, "
       "not here) or sqlite:///PATH (default: <data-dir>/cellgate.db)",
       [](Config& c, const std::string& v) { c.database = v; }},
      {"runtime-dir", "DIR", false, "short dir for kernels' ipc sockets (default /run/cellgate as root)",
       [](Config& c, const std::string& v) { c.runtime_dir = v; }},
      {"ipc-tmpfs", "auto|on|off", false,
       "mount tmpfs on <runtime-dir>/k and /s, the kernels' dirs (connection file and key, ipc sockets; status, "
       "log), so that none of it is written to a disk; auto (default): for the default runtime dir, as root",
       [](Config& c, const std::string& v) {
         if (v != "auto" && v != "on" && v != "off") throw ConfigError("--ipc-tmpfs: expected auto, on or off, got '" + v + "'");
         c.ipc_tmpfs = v;
       }},
      {"kernel-log-bytes", "SIZE", false,
       "each kernel's stdout/stderr log (written by its jail helper) keeps about its last SIZE bytes, and is "
       "relayed at most SIZE bytes a second (default 1M)",
       [](Config& c, const std::string& v) {
         c.kernel_log_bytes = parse_size("kernel-log-bytes", v);
         if (c.kernel_log_bytes < 4096 || c.kernel_log_bytes > (1ull << 30))
           throw ConfigError("--kernel-log-bytes: expected 4K to 1G, got '" + v + "'");
       }},
      {"kernelspec-dir", "DIR", true, "extra kernelspec dir, searched before the Jupyter paths (repeatable)",
       [](Config& c, const std::string& v) { c.kernelspec_dirs.push_back(v); }},
      {"default-kernel", "NAME", false, "kernelspec used when a request names none (default python3)",
       [](Config& c, const std::string& v) { c.default_kernel = v; }},
      {"allow-origin", "ORIGIN", true, "CORS and WebSocket Origin allow-list; * allows any (repeatable)",
       [](Config& c, const std::string& v) { c.allow_origins.push_back(v); }},
      {"allow-env", "NAME", true, "non-KERNEL_ env var a client may pass to a kernel (repeatable)",
       [](Config& c, const std::string& v) { c.allow_env.insert(v); }},
      {"spawner", "jail|plain", false, "jail (default) isolates every kernel; plain runs unjailed children",
       [](Config& c, const std::string& v) {
         if (v != "jail" && v != "plain") throw ConfigError("--spawner: expected jail or plain, got '" + v + "'");
         c.spawner = v;
       }},
      {"jail-helper", "PATH", false, "the cellgate-jail binary (default: beside cellgate)",
       [](Config& c, const std::string& v) { c.jail_helper = v; }},
      {"fork-server", "on|off", false,
       "start Debian ipykernels from a preloaded fork server, cellgate-zygote (default on; jail spawner only; "
       "kernels start cold while it is unavailable)",
       [](Config& c, const std::string& v) { c.fork_server = parse_on_off("fork-server", v); }},
      {"zygote", "PATH", false, "the cellgate-zygote binary (default: beside cellgate)",
       [](Config& c, const std::string& v) { c.zygote_binary = v; }},
      {"fork-server-timeout", "SECONDS", false,
       "how long a start waits for the fork server to fork its jail; past it the start fails with 503, and a "
       "jail the fork server starts later is killed (default 10)",
       [](Config& c, const std::string& v) { c.fork_server_timeout_s = static_cast<int>(parse_int("fork-server-timeout", v, 1, 3600)); }},
      {"kernel-memory-merge", "on|off", false,
       "on: every jailed kernel's memory may be merged with identical pages of other kernels by the Linux kernel's "
       "samepage merging (KSM: PR_SET_MEMORY_MERGE in each kernel; the gateway sets /sys/kernel/mm/ksm/run to 1, "
       "host-wide, and bounds ksmd's scan rate). RISK: a merged page is a side channel between tenants (a kernel can "
       "tell by timing a write whether another kernel holds a page it guessed); on only where the kernels' users "
       "may learn what the others hold. Off (default) touches no KSM setting",
       [](Config& c, const std::string& v) { c.kernel_memory_merge = parse_on_off("kernel-memory-merge", v); }},
      {"kernel-memory-merge-rate", "PAGES", false,
       "with --kernel-memory-merge on: pages a second ksmd scans at most (its CPU is the host's, charged to no "
       "kernel: ~2% of one CPU at 5000 on a 2-vCPU KVM guest; a pass over N idle forked kernels takes "
       "~N*33000/PAGES s), 50-1000000 (default 5000, KSM's own 100 pages every 20 ms)",
       [](Config& c, const std::string& v) {
         c.kernel_memory_merge_rate = static_cast<uint64_t>(parse_int("kernel-memory-merge-rate", v, 50, 1000000));
       }},
      {"jail-policy", "FILE", false, "jail policy file for every kernel (default: built-in policy)",
       [](Config& c, const std::string& v) { c.jail_policy = v; }},
      {"transport", "ipc|tcp", false, "ZeroMQ transport to kernels (default ipc)",
       [](Config& c, const std::string& v) {
         if (v != "ipc" && v != "tcp") throw ConfigError("--transport: expected ipc or tcp, got '" + v + "'");
         c.transport = v;
       }},
      {"kernel-memory", "SIZE", false, "memory limit per kernel, e.g. 2G (default: the jail policy's)",
       [](Config& c, const std::string& v) { c.limits.memory_bytes = parse_size("kernel-memory", v); }},
      {"kernel-pids", "N", false, "pids limit per kernel (default: the jail policy's)",
       [](Config& c, const std::string& v) { c.limits.pids = static_cast<uint32_t>(parse_int("kernel-pids", v, 1, 1 << 22)); }},
      {"kernel-cpus", "N", false, "CPU limit per kernel in cores, e.g. 0.5 (default: the jail policy's)",
       [](Config& c, const std::string& v) {
         char* end = nullptr;
         double n = std::strtod(v.c_str(), &end);
         if (end == v.c_str() || *end || !(n > 0 && n <= 1024)) throw ConfigError("--kernel-cpus: expected a number of cores, got '" + v + "'");
         c.limits.cpus = n;
       }},
      {"kernels-cpu-weight", "W", false,
       "CPU weight of all the kernels together (their cgroup cellgate/; v2 cpu.weight, 1-10000, v1 cpu.shares "
       "W*1024/100) against the processes beside it, the gateway's among them (weight 100): 50 (default) gives the "
       "gateway at least 2/3 of a CPU when it wants it; 0 = leave the cgroup's own. Each user's kernels share one "
       "equal weight below it",
       [](Config& c, const std::string& v) { c.kernels_cpu_weight = static_cast<int>(parse_int("kernels-cpu-weight", v, 0, 10000)); }},
      {"max-kernels", "N|auto", false,
       "kernels this gateway runs at most; 0 = unlimited; auto (the default) = the host's memory / 128M, at least 16",
       [](Config& c, const std::string& v) {
         c.max_kernels = v == "auto" ? kAutoMaxKernels : static_cast<int>(parse_int("max-kernels", v, 0, 1 << 20));
       }},
      {"kernel-start-timeout", "SECONDS", false,
       "deadline for a kernel to answer kernel_info, and for a start to get its turn (default 60)",
       [](Config& c, const std::string& v) { c.kernel_start_timeout_s = static_cast<int>(parse_int("kernel-start-timeout", v, 1, 3600)); }},
      {"max-starting", "N", false, "kernel starts (and pool claims) in flight at once, all users; 0 = no bound (default 8)",
       [](Config& c, const std::string& v) { c.max_starting = static_cast<int>(parse_int("max-starting", v, 0, 1 << 16)); }},
      {"max-starting-per-user", "N", false, "kernel starts in flight at once per user; 0 = no bound (default 4)",
       [](Config& c, const std::string& v) { c.max_starting_per_user = static_cast<int>(parse_int("max-starting-per-user", v, 0, 1 << 16)); }},
      {"start-queue", "N", false, "kernel starts waiting for their turn, all users; past it 503 (default 64)",
       [](Config& c, const std::string& v) { c.start_queue = static_cast<int>(parse_int("start-queue", v, 0, 1 << 16)); }},
      {"start-queue-per-user", "N", false, "kernel starts one user may have waiting; past it 503 (default 16)",
       [](Config& c, const std::string& v) { c.start_queue_per_user = static_cast<int>(parse_int("start-queue-per-user", v, 0, 1 << 16)); }},
      {"certfile", "FILE", false, "PEM certificate (chain) for HTTPS and WSS; needs --keyfile (default: plain HTTP)",
       [](Config& c, const std::string& v) { c.certfile = v; }},
      {"keyfile", "FILE", false, "PEM private key of --certfile",
       [](Config& c, const std::string& v) { c.keyfile = v; }},
      {"max-header", "SIZE", false, "largest HTTP request head: request line and headers (default 64K)",
       [](Config& c, const std::string& v) {
         c.max_header_bytes = parse_size("max-header", v);
         if (c.max_header_bytes < 1024 || c.max_header_bytes > (64ull << 20))
           throw ConfigError("--max-header: expected 1K to 64M, got '" + v + "'");
       }},
      {"max-body", "SIZE", false, "largest HTTP request body (default 64M)",
       [](Config& c, const std::string& v) { c.max_body_bytes = parse_size("max-body", v); }},
      {"max-ws-message", "SIZE", false, "largest WebSocket message from a client (default 256M)",
       [](Config& c, const std::string& v) { c.max_ws_message_bytes = parse_size("max-ws-message", v); }},
      {"max-kernel-message", "SIZE", false,
       "largest message from a kernel; a larger one (an output) is dropped as it streams past and its "
       "cell gets a notice on stderr (default 512M)",
       [](Config& c, const std::string& v) {
         c.max_kernel_message_bytes = parse_size("max-kernel-message", v);
         if (c.max_kernel_message_bytes < 64 * 1024)
           throw ConfigError("--max-kernel-message: expected at least 64K, got '" + v + "'");
       }},
      {"kernel-output-rate", "SIZE", false,
       "output (iopub) bytes per second the gateway reads from one kernel, with a burst of one second's "
       "worth; past it the rest waits in the kernel's own socket and queue (its memory, whose high-water "
       "mark drops the excess), not in the gateway's io thread; 0 = as fast as it comes (the default; a gateway "
       "that tenants share sets it, e.g. 16M)",
       [](Config& c, const std::string& v) { c.kernel_output_rate = parse_size("kernel-output-rate", v); }},
      {"kernel-read-budget", "SIZE", false,
       "memory the partly received large messages (over 512K) of all kernels may hold together; one "
       "that does not fit is dropped as one over --max-kernel-message is (default 1G, or twice "
       "--max-kernel-message if that is more)",
       [](Config& c, const std::string& v) {
         c.kernel_read_budget = parse_size("kernel-read-budget", v);
         if (c.kernel_read_budget == 0) throw ConfigError("--kernel-read-budget: expected a size above 0, got '" + v + "'");
       }},
      {"ws-read-per-user", "SIZE", false,
       "memory one user's WebSocket messages may hold together while they are being read (default twice "
       "--max-ws-message); the socket whose message does not fit is closed with 1009",
       [](Config& c, const std::string& v) {
         c.ws_read_per_user_bytes = parse_size("ws-read-per-user", v);
         if (c.ws_read_per_user_bytes < (64ull << 10)) throw ConfigError("--ws-read-per-user: expected at least 64K, got '" + v + "'");
       }},
      {"ws-queue", "SIZE", false, "bytes queued to one WebSocket before it is closed as too slow (default 64M); one user's WebSockets "
       "together, 4 times this",
       [](Config& c, const std::string& v) { c.ws_queue_bytes = parse_size("ws-queue", v); }},
      {"replay-buffer", "SIZE", false, "bytes kept per disconnected session_id for replay (default 16M)",
       [](Config& c, const std::string& v) { c.replay_bytes = parse_size("replay-buffer", v); }},
      {"ws-ping-interval", "SECONDS", false, "WebSocket keepalive ping period (default 30)",
       [](Config& c, const std::string& v) { c.ws_ping_interval_s = static_cast<int>(parse_int("ws-ping-interval", v, 1, 3600)); }},
      {"execute-output-limit", "SIZE", false, "agent execute API: output bytes kept per call, the rest cut and marked (default 1M)",
       [](Config& c, const std::string& v) { c.execute_output_bytes = parse_size("execute-output-limit", v); }},
      {"execute-limit", "SECONDS", false, "wall-clock limit per execution: interrupt, then restart (default 0 = off)",
       [](Config& c, const std::string& v) { c.execute_limit_s = static_cast<int>(parse_int("execute-limit", v, 0, 86400 * 7)); }},
      {"max-kernels-per-user", "N", false, "default per-user kernel quota (default 32); 0 = none (users may have their own)",
       [](Config& c, const std::string& v) { c.max_kernels_per_user = static_cast<int>(parse_int("max-kernels-per-user", v, 0, 1 << 20)); }},
      {"max-connections-per-user", "N", false, "open WebSockets one user may hold; 0 = none (default 64; users may have their own)",
       [](Config& c, const std::string& v) { c.max_connections_per_user = static_cast<int>(parse_int("max-connections-per-user", v, 0, 1 << 20)); }},
      {"max-sessions-per-user", "N", false, "sessions (/api/sessions) one user may hold; past it 429; 0 = none (default 256)",
       [](Config& c, const std::string& v) { c.max_sessions_per_user = static_cast<int>(parse_int("max-sessions-per-user", v, 0, 1 << 20)); }},
      {"max-artifacts-per-user", "N", false,
       "artifacts (/api/artifacts) one user may hold; past it 403; their bytes count against --store-bytes; 0 = none "
       "(default 1000)",
       [](Config& c, const std::string& v) { c.max_artifacts_per_user = static_cast<int>(parse_int("max-artifacts-per-user", v, 0, 1 << 20)); }},
      {"workspace-bytes", "SIZE", false, "default cap on a workspace's bytes (default 10G)",
       [](Config& c, const std::string& v) { c.workspace_bytes = parse_size("workspace-bytes", v); }},
      {"user-workspace-bytes", "SIZE", false,
       "cap on what all of one user's workspaces hold together on the workspace volume, enforced at write time "
       "like --workspace-bytes (EDQUOT inside the kernel, 507 for an upload): a user with many workspaces or "
       "kernels cannot fill the volume; 0 = no cap (default)",
       [](Config& c, const std::string& v) { c.user_workspace_bytes = parse_size("user-workspace-bytes", v); }},
      {"store-bytes", "SIZE", false,
       "default cap on what all of a user's snapshots hold in the snapshot store (each object a user's workspace "
       "references, once per workspace, in 4 KiB blocks, plus manifests); 0 = no cap (default 20G)",
       [](Config& c, const std::string& v) { c.store_bytes = parse_size("store-bytes", v); }},
      {"workspace-volume", "auto|on|off", false,
       "keep workspace trees in <data-dir>/workspaces.img, a loop-mounted btrfs volume where each tree has a live "
       "quota of --workspace-bytes (a write past it fails with EDQUOT); auto (default): on as root, off otherwise; "
       "on (and auto as root) fails the start when the volume cannot be made; off: plain directories, sizes checked "
       "at snapshots only and the host path visible in jails (a warning at start)",
       [](Config& c, const std::string& v) {
         if (v != "auto" && v != "on" && v != "off") throw ConfigError("--workspace-volume: expected auto, on or off, got '" + v + "'");
         c.workspace_volume = v;
       }},
      {"workspace-volume-size", "SIZE", false,
       "the volume's size when it is made (or grown; at least 1G, default 16G): a sparse file, so it takes the "
       "host's disk only as workspaces fill it, and never more than SIZE",
       [](Config& c, const std::string& v) {
         c.workspace_volume_bytes = parse_size("workspace-volume-size", v);
         if (c.workspace_volume_bytes < (1ull << 30)) throw ConfigError("--workspace-volume-size: at least 1G, got '" + v + "'");
       }},
      {"workspace-files", "N", false, "default cap on a workspace's files (default 200000)",
       [](Config& c, const std::string& v) { c.workspace_files = static_cast<uint64_t>(parse_int("workspace-files", v, 1, 1L << 40)); }},
      {"snapshot-keep", "N", false, "automatic snapshots kept per workspace; labelled ones are always kept (default 20)",
       [](Config& c, const std::string& v) { c.snapshot_keep = static_cast<size_t>(parse_int("snapshot-keep", v, 1, 1 << 20)); }},
      {"cull-idle-timeout", "SECONDS", false, "shut down kernels idle this long; 0 = never (default)",
       [](Config& c, const std::string& v) { c.cull_idle_timeout_s = static_cast<int>(parse_int("cull-idle-timeout", v, 0, 1 << 30)); }},
      {"cull-interval", "SECONDS", false, "how often to look for idle kernels (default 60)",
       [](Config& c, const std::string& v) { c.cull_interval_s = static_cast<int>(parse_int("cull-interval", v, 1, 86400)); }},
      {"cull-busy", "true|false", false, "also cull busy kernels (default false)",
       [](Config& c, const std::string& v) { c.cull_busy = parse_bool("cull-busy", v); }},
      {"cull-connected", "true|false", false, "also cull kernels with open WebSockets (default false)",
       [](Config& c, const std::string& v) { c.cull_connected = parse_bool("cull-connected", v); }},
      {"shutdown-kernels-on-exit", "true|false", false, "stop kernels when the gateway stops (default false: they keep running and are re-adopted)",
       [](Config& c, const std::string& v) { c.shutdown_kernels_on_exit = parse_bool("shutdown-kernels-on-exit", v); }},
      {"auth-failures-per-minute", "N", false, "failed authentications one address may make per minute before 429 (default 100)",
       [](Config& c, const std::string& v) { c.auth_failures_per_minute = static_cast<int>(parse_int("auth-failures-per-minute", v, 1, 1 << 20)); }},
      {"heartbeat-timeout", "SECONDS", false, "a kernel that answers no heartbeat this long is restarted (default 30)",
       [](Config& c, const std::string& v) { c.heartbeat_timeout_s = static_cast<int>(parse_int("heartbeat-timeout", v, 1, 3600)); }},
      {"pause-after", "SECONDS", false, "freeze (cgroup freezer) kernels idle this long, thaw on their next message; 0 = never (default)",
       [](Config& c, const std::string& v) { c.pause_after_s = static_cast<int>(parse_int("pause-after", v, 0, 1 << 30)); }},
      {"freezer", "auto|v2|v1", false, "cgroup freezer for pausing: v2 cgroup.freeze, v1 freezer.state, auto = v2 if the jail has it (default)",
       [](Config& c, const std::string& v) {
         if (v == "auto") c.freezer = launcher::Freezer::kAuto;
         else if (v == "v2") c.freezer = launcher::Freezer::kV2;
         else if (v == "v1") c.freezer = launcher::Freezer::kV1;
         else throw ConfigError("--freezer: expected auto, v2 or v1, got '" + v + "'");
       }},
      {"pool", "NAME=N", true, "keep N kernels of kernelspec NAME started, handed out by POST /api/kernels (repeatable)",
       [](Config& c, const std::string& v) {
         auto eq = v.find('=');
         if (eq == std::string::npos || eq == 0) throw ConfigError("--pool: expected NAME=N, got '" + v + "'");
         c.pool[v.substr(0, eq)] = static_cast<int>(parse_int("pool", v.substr(eq + 1), 0, 1024));
       }},
      {"pool-max-memory", "SIZE", false, "memory the pooled kernels may use together; 0 = no cap (default)",
       [](Config& c, const std::string& v) { c.pool_max_memory = parse_size("pool-max-memory", v); }},
      {"pool-concurrency", "N", false, "pool kernels started at once, the refill's CPU budget (default 1)",
       [](Config& c, const std::string& v) { c.pool_concurrency = static_cast<int>(parse_int("pool-concurrency", v, 1, 64)); }},
      {"seed-notebook", "PATH", false, "notebook whose code cells run on every new kernel of its language, also after restarts",
       [](Config& c, const std::string& v) { c.seed_notebook = v; }},
      {"seed-timeout", "SECONDS", false, "a seed must finish within this, else the start fails (default 120)",
       [](Config& c, const std::string& v) { c.seed_timeout_s = static_cast<int>(parse_int("seed-timeout", v, 1, 86400)); }},
      {"notebook-http", "NOTEBOOK", false, "serve the notebook's annotated cells (# GET /path) as HTTP endpoints instead of the Jupyter API",
       [](Config& c, const std::string& v) { c.notebook_http = v; }},
      {"notebook-http-kernel", "NAME", false, "kernelspec for notebook-http (default: the notebook's, else --default-kernel)",
       [](Config& c, const std::string& v) { c.notebook_http_kernel = v; }},
      {"notebook-http-kernels", "N", false, "kernels serving notebook-http requests, one request each at a time (default 2)",
       [](Config& c, const std::string& v) { c.notebook_http_kernels = static_cast<int>(parse_int("notebook-http-kernels", v, 1, 256)); }},
      // The warm pool is the only "pool"; the old name keeps existing command lines and configs working.
      {"notebook-http-pool", "N", false, "former name of --notebook-http-kernels",
       [](Config& c, const std::string& v) { c.notebook_http_kernels = static_cast<int>(parse_int("notebook-http-pool", v, 1, 256)); }},
      {"notebook-http-timeout", "SECONDS", false, "notebook-http: limit per request, its cells together (default 30)",
       [](Config& c, const std::string& v) { c.notebook_http_timeout_s = static_cast<int>(parse_int("notebook-http-timeout", v, 1, 86400)); }},
      {"notebook-http-max-body", "SIZE", false, "notebook-http: largest request body (default 1M)",
       [](Config& c, const std::string& v) { c.notebook_http_max_body = parse_size("notebook-http-max-body", v); }},
      {"notebook-http-queue", "N", false, "notebook-http: requests waiting for a kernel before 503 (default 64)",
       [](Config& c, const std::string& v) { c.notebook_http_queue = static_cast<int>(parse_int("notebook-http-queue", v, 0, 1 << 20)); }},
      {"notebook-http-public", "true|false", false, "notebook-http: serve the endpoints without a token (default false)",
       [](Config& c, const std::string& v) { c.notebook_http_public = parse_bool("notebook-http-public", v); }},
      {"egress", "on|off", false,
       "start the egress proxy, cellgate-egress, through which kernels with a network policy reach the network "
       "(default on; jail spawner only); off: a policy other than none is refused",
       [](Config& c, const std::string& v) { c.egress = parse_on_off("egress", v); }},
      {"egress-binary", "PATH", false, "the cellgate-egress binary (default: beside cellgate)",
       [](Config& c, const std::string& v) { c.egress_binary = v; }},
      {"egress-hosts", "FILE", false, "hosts(5)-style names the egress proxy resolves before DNS",
       [](Config& c, const std::string& v) { c.egress_hosts = v; }},
      {"egress-dns", "true|false", false, "false: the egress proxy resolves names from --egress-hosts only (default true)",
       [](Config& c, const std::string& v) { c.egress_dns = parse_bool("egress-dns", v); }},
      {"egress-secrets", "FILE", false,
       "JSON {NAME: VALUE} (mode 0600) of the secrets header rules name as ${secret:NAME}; kernels never see them",
       [](Config& c, const std::string& v) { c.egress_secrets = v; }},
      {"egress-upstream-ca", "FILE", false, "PEM CAs the egress proxy trusts upstream besides the system store",
       [](Config& c, const std::string& v) { c.egress_upstream_ca = v; }},
      {"egress-ip-rules", "true|false", false, "accept IP and CIDR rules in network policies (default false)",
       [](Config& c, const std::string& v) { c.egress_ip_rules = parse_bool("egress-ip-rules", v); }},
      {"egress-limits", "JSON", false,
       "per-kernel egress defaults, e.g. {\"bytes_out\":\"1G\",\"open\":64,\"rate\":50} (README \"Network policy\")",
       [](Config& c, const std::string& v) { c.egress_limits = v; }},
      {"metrics-token", "T", false, "a token that may read GET /metrics (and nothing else); admins' tokens may too",
       [](Config& c, const std::string& v) { c.metrics_token = v; }},
      {"events-buffer", "N", false, "GET /api/events: recent events kept to resume from (default 4096; a reader further behind is dropped)",
       [](Config& c, const std::string& v) { c.events_buffer = static_cast<int>(parse_int("events-buffer", v, 16, 1 << 20)); }},
      {"metrics-per-user", "true|false", false, "GET /metrics: figures per user (a label value per user; default false)",
       [](Config& c, const std::string& v) { c.metrics_per_user = parse_bool("metrics-per-user", v); }},
      {"cluster-listen", "ADDR:PORT", false,
       "join a cluster of nodes sharing --database (PostgreSQL): the internal mutual-TLS listener (default: off, "
       "one machine)",
       [](Config& c, const std::string& v) { c.cluster_listen = v; }},
      {"cluster-advertise", "HOST:PORT", false, "the address other nodes dial (default: --cluster-listen)",
       [](Config& c, const std::string& v) { c.cluster_advertise = v; }},
      {"node-id", "ID", false, "this node's name in the cluster, [A-Za-z0-9._-]{1,64} (default: the host name)",
       [](Config& c, const std::string& v) { c.node_id = v; }},
      {"cluster-cert", "FILE", false, "PEM certificate of this node, issued by --cluster-ca (CN = the node id)",
       [](Config& c, const std::string& v) { c.cluster_cert = v; }},
      {"cluster-key", "FILE", false, "PEM private key of --cluster-cert",
       [](Config& c, const std::string& v) { c.cluster_key = v; }},
      {"cluster-ca", "FILE", false, "PEM CA certificate: the only issuer a peer node's certificate may have",
       [](Config& c, const std::string& v) { c.cluster_ca = v; }},
      {"node-lease", "SECONDS", false, "a node that has not renewed its row this long is lost (default 10)",
       [](Config& c, const std::string& v) { c.node_lease_s = static_cast<int>(parse_int("node-lease", v, 3, 3600)); }},
      {"journal", "on|off", false, "keep an execution journal per kernel in the state database (default on)",
       [](Config& c, const std::string& v) { c.journal = parse_on_off("journal", v); }},
      {"journal-bytes", "SIZE", false,
       "what one user's journals may hold (entries and baseline snapshots), all their kernels together; oldest "
       "first; 0 = no bound "
       "(default 256M; users may have their own)",
       [](Config& c, const std::string& v) { c.journal_bytes = parse_size("journal-bytes", v); }},
      {"journal-days", "N", false, "days journal entries are kept; 0 = no bound (default 30; users may have their own)",
       [](Config& c, const std::string& v) { c.journal_days = static_cast<int>(parse_int("journal-days", v, 0, 100 * 365)); }},
      {"journal-entry-bytes", "SIZE", false,
       "code and outputs kept per journal entry; past it outputs are counted, not kept (default 1M)",
       [](Config& c, const std::string& v) {
         c.journal_entry_bytes = parse_size("journal-entry-bytes", v);
         if (c.journal_entry_bytes < 4096 || c.journal_entry_bytes > (64ull << 20))
           throw ConfigError("--journal-entry-bytes: expected 4K to 64M, got '" + v + "'");
       }},
      {"log-level", "LEVEL", false, "debug, info, warn or error (default info)",
       [](Config& c, const std::string& v) { c.log_level = v; }},
  };
  return kOptions;
}

std::string env_name(const char* name) {
  std::string out = "CELLGATE_";
  for (const char* p = name; *p; ++p) out += *p == '-' ? '_' : static_cast<char>(std::toupper(*p));
  return out;
}

std::string key_name(const char* name) {
  std::string out = name;
  for (char& c : out) if (c == '-') c = '_';
  return out;
}

const Option* find_option(const std::string& name) {
  for (const auto& o : options()) if (name == o.name) return &o;
  return nullptr;
}

void apply_config_file(Config& c, const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError("--config: cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw ConfigError("--config: " + path + " is not a JSON object");
  for (const auto& [key, value] : j.items()) {
    const Option* opt = nullptr;
    for (const auto& o : options()) if (key_name(o.name) == key) opt = &o;
    if (!opt) throw ConfigError(fmt::format("{}: unknown key '{}'", path, key));
    auto as_string = [&](const nlohmann::json& v) -> std::string {
      if (v.is_string()) return v.get<std::string>();
      if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
      if (v.is_number_integer()) return std::to_string(v.get<long long>());
      if (v.is_number()) return fmt::format("{}", v.get<double>());
      throw ConfigError(fmt::format("{}: '{}' must be a string or a number", path, key));
    };
    if (value.is_array()) {
      if (!opt->repeatable) throw ConfigError(fmt::format("{}: '{}' takes one value", path, key));
      for (const auto& v : value) opt->set(c, as_string(v));
    } else {
      opt->set(c, as_string(value));
    }
  }
}

// Cluster options make sense only together: a node without PostgreSQL, or without the three PEM files
// of mutual TLS, would run as a cluster of one that believes it has peers.
void finish_cluster(Config& c) {
  if (!c.clustered()) {
    using Named = std::pair<const char*, const std::string*>;
    for (const auto& [name, v] : std::initializer_list<Named>{{"cluster-advertise", &c.cluster_advertise},
                                                             {"node-id", &c.node_id}, {"cluster-cert", &c.cluster_cert},
                                                             {"cluster-key", &c.cluster_key}, {"cluster-ca", &c.cluster_ca}})
      if (!v->empty()) throw ConfigError(fmt::format("--{} needs --cluster-listen", name));
    return;
  }
  if (c.database.rfind("postgresql://", 0) != 0 && c.database.rfind("postgres://", 0) != 0)
    throw ConfigError("--cluster-listen needs --database postgresql://...: the nodes share their state there");
  if (c.cluster_cert.empty() || c.cluster_key.empty() || c.cluster_ca.empty())
    throw ConfigError("--cluster-listen needs --cluster-cert, --cluster-key and --cluster-ca (mutual TLS between nodes)");
  if (c.node_id.empty()) {
    char host[256] = {};
    if (::gethostname(host, sizeof(host) - 1) != 0) throw ConfigError("--node-id: not given, and no host name");
    c.node_id = host;
  }
  bool ok = !c.node_id.empty() && c.node_id.size() <= 64 && c.node_id != "." && c.node_id != "..";
  for (char ch : c.node_id) ok = ok && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-');
  if (!ok) throw ConfigError("--node-id: expected 1 to 64 of [A-Za-z0-9._-], got '" + c.node_id + "'");
  if (c.cluster_advertise.empty()) c.cluster_advertise = c.cluster_listen;
  using Named = std::pair<const char*, const std::string*>;
  for (const auto& [name, v] : std::initializer_list<Named>{{"cluster-listen", &c.cluster_listen},
                                                           {"cluster-advertise", &c.cluster_advertise}}) {
    const auto colon = v->rfind(':');
    if (colon == std::string::npos || colon == 0) throw ConfigError(fmt::format("--{}: expected HOST:PORT, got '{}'", name, *v));
    parse_int(name, v->substr(colon + 1), 0, 65535);
  }
}

// The first line of --token-file, without its line end: a token kept off every command line.
std::string read_token_file(const std::string& path, bool also_token) {
  if (also_token) throw ConfigError("give --token or --token-file, not both");
  std::ifstream in(path);
  if (!in) throw ConfigError(fmt::format("--token-file {}: {}", path, std::strerror(errno)));
  std::string token;
  std::getline(in, token);
  while (!token.empty() && (token.back() == '\r' || token.back() == ' ' || token.back() == '\t')) token.pop_back();
  if (token.empty()) throw ConfigError("--token-file " + path + ": its first line is empty");
  if (token.size() > 4096) throw ConfigError("--token-file " + path + ": the token is longer than 4096 bytes");
  for (unsigned char ch : token) {
    if (ch < 0x21 || ch == 0x7f) throw ConfigError("--token-file " + path + ": the token holds a space or control character");
  }
  return token;
}

void finish(Config& c) {
  if (c.max_kernels == kAutoMaxKernels) c.max_kernels = auto_max_kernels();
  if (c.base_url.empty() || c.base_url.front() != '/') c.base_url = "/" + c.base_url;
  if (c.base_url.back() != '/') c.base_url += '/';
  if (!c.token_file.empty()) c.token = read_token_file(c.token_file, !c.token.empty());
  if (c.token.empty()) {
    c.token = common::random_hex(24);
    c.token_generated = true;
  }
  std::error_code ec;
  c.data_dir = std::filesystem::absolute(c.data_dir, ec).lexically_normal().string();
  while (c.data_dir.size() > 1 && c.data_dir.back() == '/') c.data_dir.pop_back();
  if (!c.store_dir.empty()) {
    c.store_dir = std::filesystem::absolute(c.store_dir, ec).lexically_normal().string();
    while (c.store_dir.size() > 1 && c.store_dir.back() == '/') c.store_dir.pop_back();
  }
  c.runtime_dir_default = c.runtime_dir.empty();
  if (c.runtime_dir.empty())
    c.runtime_dir = ::geteuid() == 0 ? "/run/cellgate" : fmt::format("/tmp/cellgate-{}", ::geteuid());
  if (c.jail_helper.empty()) {
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    c.jail_helper = (self.parent_path() / "cellgate-jail").string();
  }
  if (c.zygote_binary.empty()) {
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    c.zygote_binary = (self.parent_path() / "cellgate-zygote").string();
  }
  if (c.egress_binary.empty()) {
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    c.egress_binary = (self.parent_path() / "cellgate-egress").string();
  }
  if (c.kernel_memory_merge && c.spawner != "jail")
    throw ConfigError("--kernel-memory-merge on needs --spawner jail (the jail marks the kernel's memory)");
  if (c.spawner != "jail") c.egress = false;  // a plain kernel has the host's network; no proxy to put in front
  if (c.certfile.empty() != c.keyfile.empty())
    throw ConfigError(c.certfile.empty() ? "--keyfile needs --certfile" : "--certfile needs --keyfile");
  std::error_code aec;
  if (!c.seed_notebook.empty()) c.seed_notebook = std::filesystem::absolute(c.seed_notebook, aec).string();
  if (!c.notebook_http.empty()) {
    c.notebook_http = std::filesystem::absolute(c.notebook_http, aec).string();
    // The endpoints are the only bodies this mode reads.
    c.max_body_bytes = c.notebook_http_max_body;
  }
  if (c.kernel_read_budget == 0) c.kernel_read_budget = std::max<uint64_t>(1ull << 30, 2 * c.max_kernel_message_bytes);
  if (c.kernel_read_budget < c.max_kernel_message_bytes)
    throw ConfigError(fmt::format("--kernel-read-budget ({}) is below --max-kernel-message ({}): no message that "
                                  "large could ever be read", c.kernel_read_budget, c.max_kernel_message_bytes));
  finish_cluster(c);
  if (c.log_level != "debug" && c.log_level != "info" && c.log_level != "warn" && c.log_level != "error")
    throw ConfigError("--log-level: expected debug, info, warn or error, got '" + c.log_level + "'");
}

}  // namespace

std::string config_help() {
  std::string out =
      "usage: cellgate serve [options]\n\n"
      "Serves the Jupyter Server kernels API (REST and WebSocket) with jailed kernels.\n"
      "Every option can also be set as env CELLGATE_<NAME> (e.g. CELLGATE_PORT=0) or as a key\n"
      "in the JSON file given by --config (e.g. {\"port\": 0, \"allow_env\": [\"FOO\"]}).\n"
      "Precedence: flags, then env, then the config file.\n\n"
      "  --config FILE                 JSON config file (env CELLGATE_CONFIG)\n";
  for (const auto& o : options()) {
    std::string flag = fmt::format("--{} {}", o.name, o.arg);
    out += fmt::format("  {:<30}{}\n", flag, o.help);
    out += fmt::format("  {:<30}env {}\n", "", env_name(o.name));
  }
  out += "  --help                        this text\n";
  return out;
}

Config load_config(int argc, char** argv) {
  Config c;
  c.max_kernels = kAutoMaxKernels;
  c.max_kernels_per_user = kDefaultMaxKernelsPerUser;
  std::string config_file;
  if (const char* f = std::getenv("CELLGATE_CONFIG")) config_file = f;
  std::vector<std::pair<const Option*, std::string>> flags;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::cout << config_help();
      std::exit(0);
    }
    if (a.rfind("--", 0) != 0) throw ConfigError("unexpected argument '" + a + "' (see --help)");
    std::string name = a.substr(2), value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    const Option* opt = find_option(name);
    if (!opt && name != "config") throw ConfigError("unknown option --" + name + " (see --help)");
    if (!has_value) {
      if (i + 1 >= argc) throw ConfigError("--" + name + " needs a value");
      value = argv[++i];
    }
    if (!opt) {
      config_file = value;
      continue;
    }
    flags.emplace_back(opt, value);
  }
  if (!config_file.empty()) apply_config_file(c, config_file);
  for (const auto& o : options()) {
    const char* v = std::getenv(env_name(o.name).c_str());
    if (!v) continue;
    if (o.repeatable) {
      std::stringstream ss(v);
      std::string item;
      while (std::getline(ss, item, ',')) if (!item.empty()) o.set(c, item);
    } else {
      o.set(c, v);
    }
  }
  // Repeatable flags replace what env or the file gave, rather than appending to it.
  std::set<const Option*> reset;
  for (const auto& [opt, value] : flags) {
    if (opt->repeatable && !reset.count(opt)) {
      if (std::string(opt->name) == "kernelspec-dir") c.kernelspec_dirs.clear();
      if (std::string(opt->name) == "allow-origin") c.allow_origins.clear();
      if (std::string(opt->name) == "allow-env") c.allow_env.clear();
      if (std::string(opt->name) == "pool") c.pool.clear();
      reset.insert(opt);
    }
    opt->set(c, value);
  }
  finish(c);
  return c;
}

journal::JournalConfig journal_config(const Config& c) {
  journal::JournalConfig j;
  j.enabled = c.journal;
  j.bounds.entry_bytes = c.journal_entry_bytes;
  // Two entries' worth at once: a kernel runs one execution at a time; its queue is code only.
  j.bounds.kernel_open_bytes = 2 * c.journal_entry_bytes + (1 << 20);
  // One owner's share of the writer's queue holds at least what one of their kernels may have open.
  j.writer.owner_queue_bytes =
      std::min(j.writer.queue_bytes, std::max<uint64_t>(j.writer.queue_bytes / 8, j.bounds.kernel_open_bytes));
  j.writer.retention.bytes = static_cast<int64_t>(std::min<uint64_t>(c.journal_bytes, INT64_MAX));
  j.writer.retention.days = c.journal_days;
  return j;
}

}  // namespace cellgate::gateway
