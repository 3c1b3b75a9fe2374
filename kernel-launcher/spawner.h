// SPDX-License-Identifier: BSD-3-Clause
// spawner: the one interface through which kernels are started and signalled (plain or jailed).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "common/result.h"
#include "common/unique_fd.h"
#include "kernel-launcher/egress_env.h"

namespace cellgate::launcher {

// Resource limits for one kernel; 0 means "the spawner's (policy's) default".
struct Limits {
  uint64_t memory_bytes = 0;
  uint32_t pids = 0;
  double cpus = 0;
  uint32_t nofile = 0;
  uint64_t fsize_bytes = 0;
  uint64_t tmp_bytes = 0;
};

struct SpawnRequest {
  std::string kernel_id;
  std::vector<std::string> argv;            // {connection_file} already substituted
  std::map<std::string, std::string> env;   // the complete environment; nothing else is inherited
  std::string runtime_dir;                  // per-kernel host dir the kernel shares: connection file, ipc sockets
  std::string private_dir;                  // per-kernel host dir the kernel never sees: status, log
  std::string workspace_dir;                // host dir: the kernel's cwd (/workspace in a jail)
  std::string policy_file;                  // jail policy; "" = default
  Limits limits;
  EgressEndpoint egress;                    // jail only: the network through cellgate-egress
  std::string cgroup_owner;                 // jail only: cellgate/<owner>/<kernel>; "" = cellgate/<kernel>
};

// A started kernel process (the kernel itself, or the jail helper that supervises it).
struct ProcessHandle {
  pid_t pid = -1;
  common::UniqueFd pidfd;      // readable when the process exits (pidfd_open(2))
  common::UniqueFd ready_fd;   // jail only: one JSON line, then EOF; invalid for plain spawns
  std::string status_file;     // jail only: JSON status written by the helper
  bool is_child = true;        // false when re-adopted after a gateway restart (cannot waitpid)
  bool forked = false;         // forked by the fork server (cellgate-zygote), not started cold
};

enum class KernelSignal { kInterrupt, kTerminate, kKill };
// Which cgroup freezer pauses a kernel: kAuto = v2 cgroup.freeze when the jail has a v2 dir, else v1.
enum class Freezer { kAuto, kV2, kV1 };

class Spawner {
 public:
  virtual ~Spawner() = default;
  virtual const char* name() const = 0;
  // Starts the kernel in its own session, detached from the gateway's life. Runs on the io thread and
  // never blocks it: a posix_spawn returns once the helper has exec'd, and the fork server's answer is
  // awaited. Errors carry the failing step; kUnavailable when the fork server did not answer in time.
  // request must outlive the wait.
  virtual boost::asio::awaitable<common::Result<ProcessHandle>> spawn(const SpawnRequest& request) = 0;
  // Interrupt = SIGINT to the kernel; terminate = SIGTERM; kill = the whole process tree, now.
  virtual void signal(const ProcessHandle& process, KernelSignal sig) = 0;
  // After exit: why the kernel died, in words ("" for an ordinary exit), e.g. "memory limit 512 MiB exceeded".
  virtual std::string exit_reason(const ProcessHandle& process, int wait_status) = 0;
  // Freezes every process of the kernel (cgroup freezer; never SIGSTOP, which the kernel could undo)
  // or thaws it. kUnavailable where the spawner has no cgroup (plain).
  virtual common::Status freeze(const ProcessHandle& process, bool frozen, Freezer kind);
  // Rewrites the kernel's cgroup limits while it runs (0 fields stay). kUnavailable without a cgroup.
  virtual common::Status set_limits(const ProcessHandle& process, const Limits& limits);
  // Memory charged to the kernel's cgroup now; 0 when unknown.
  virtual uint64_t memory_usage(const ProcessHandle& process);
  // CPU seconds the kernel's cgroup used so far; 0 when unknown.
  virtual double cpu_seconds(const ProcessHandle& process);
  // The host uid the kernel runs as, which its sockets' listeners carry (SO_PEERCRED); nullopt while
  // not known yet. The gateway connects to nothing else: the kernel can swap its socket paths for
  // symlinks to any host socket. Default: our own uid (plain kernels are our children).
  virtual std::optional<uid_t> kernel_uid(const ProcessHandle& process);
  // After the kernel's process is gone: what its jail left behind (a helper killed by SIGKILL cannot
  // remove its cgroup), as a step to call until it returns true; it never blocks. Read while the
  // status file still exists. Empty when nothing can be left (plain kernels).
  virtual std::function<bool()> release(const ProcessHandle& process);
};

// Plain child processes: no isolation. For development and for hosts without user namespaces.
std::unique_ptr<Spawner> make_plain_spawner();
// Kernels jailed by the cellgate-jail helper at helper_path (see isolation/).
std::unique_ptr<Spawner> make_jail_spawner(std::string helper_path, std::vector<std::string> extra_args);

// Debian ipykernels (`python3 -m ipykernel_launcher -f FILE` on /usr/bin/python3) from the
// cellgate-zygote fork server listening on socket_path, jailed exactly as `cold` would jail them;
// every other request, and every one the fork server cannot take (not running yet, gone, refused),
// goes to `cold` (the jail spawner). A request the fork server has taken but not answered within
// `timeout` fails (zygote_client.h). extra_args as for make_jail_spawner.
std::unique_ptr<Spawner> make_zygote_spawner(std::string socket_path, std::unique_ptr<Spawner> cold,
                                             std::vector<std::string> extra_args, std::chrono::milliseconds timeout);

// Reaps the process if it is our child and has exited; returns its wait status, or -1 when unknown.
int reap(const ProcessHandle& process);
// Describes a wait status: "exit code 1", "killed by signal 9 (Killed)".
std::string describe_wait_status(int wait_status);

}  // namespace cellgate::launcher
