// SPDX-License-Identifier: BSD-3-Clause
// plain_spawner: kernels as plain child processes in their own session (no isolation).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/core.h>

#include "kernel-launcher/spawn_util.h"
#include "kernel-launcher/spawner.h"

namespace cellgate::launcher {
namespace {

using common::Errc;
using common::make_error;

class PlainSpawner final : public Spawner {
 public:
  const char* name() const override { return "plain"; }

  boost::asio::awaitable<common::Result<ProcessHandle>> spawn(const SpawnRequest& req) override {
    // The kernel's stdout/stderr go to a log in its runtime dir: they are not the gateway's to print,
    // and the tail explains a kernel that dies at start.
    co_return spawn_process(req.argv, req.env, req.workspace_dir, req.private_dir + "/kernel.log", -1);
  }

  void signal(const ProcessHandle& p, KernelSignal sig) override {
    if (p.pid <= 0) return;
    // The kernel leads its own session and process group (POSIX_SPAWN_SETSID), so signalling the
    // group reaches its subprocesses too, as jupyter_client's signal_kernel does with killpg.
    int signo = sig == KernelSignal::kInterrupt ? SIGINT : sig == KernelSignal::kTerminate ? SIGTERM : SIGKILL;
    if (::kill(-p.pid, signo) != 0) ::kill(p.pid, signo);
  }

  std::string exit_reason(const ProcessHandle&, int) override { return ""; }
};

}  // namespace

std::unique_ptr<Spawner> make_plain_spawner() { return std::make_unique<PlainSpawner>(); }

}  // namespace cellgate::launcher
