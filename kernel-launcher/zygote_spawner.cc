// SPDX-License-Identifier: BSD-3-Clause
// zygote_spawner: ipykernels from the cellgate-zygote fork server, everything else (and every
// request the fork server cannot take) from the cold jail spawner.
#include <cstdlib>

#include "common/log.h"
#include "kernel-launcher/jail_args.h"
#include "kernel-launcher/kernelspec.h"
#include "kernel-launcher/spawn_util.h"
#include "kernel-launcher/spawner.h"
#include "kernel-launcher/zygote_client.h"

namespace cellgate::launcher {
namespace {

// The argv the fork server runs (python3 resolved the way the helper would, on the host's same /usr),
// or empty when this request must start cold: another program, other arguments, or PYTHON*
// variables, which only an interpreter start reads (the zygote's interpreter started long ago) —
// except the two the kernel's entry applies itself (kernels/zygote/python_image.cc).
std::vector<std::string> zygote_argv(const SpawnRequest& req) {
  const auto& a = req.argv;
  if (a.size() != 5 || a[1] != "-m" || a[2] != "ipykernel_launcher" || a[3] != "-f") return {};
  std::string program = resolve_program(a[0], req.env);
  char* real = ::realpath(program.c_str(), nullptr);
  char* served = ::realpath(kKernelPython, nullptr);
  bool same = real != nullptr && served != nullptr && std::string(real) == served;
  std::free(real);
  std::free(served);
  if (!same) return {};
  for (const auto& [k, v] : req.env) {
    if (k.starts_with("PYTHON") && k != "PYTHONUNBUFFERED" && k != "PYTHONDONTWRITEBYTECODE") return {};
  }
  std::vector<std::string> argv = a;
  argv[0] = kKernelPython;
  return argv;
}

class ZygoteSpawner final : public Spawner {
 public:
  ZygoteSpawner(std::string socket, std::unique_ptr<Spawner> cold, std::vector<std::string> extra,
                std::chrono::milliseconds timeout)
      : socket_(std::move(socket)), cold_(std::move(cold)), extra_(std::move(extra)), timeout_(timeout) {}

  const char* name() const override { return "zygote"; }

  boost::asio::awaitable<common::Result<ProcessHandle>> spawn(const SpawnRequest& req) override {
    auto argv = zygote_argv(req);
    if (argv.empty()) co_return co_await cold_->spawn(req);
    if (auto st = write_env_file(jail_env_file(req), req.env); !st) co_return st.error();
    SpawnRequest forked = req;
    forked.argv = std::move(argv);
    // Named: GCC 12 can destroy a temporary in a co_await operand twice.
    const auto args = jail_args(forked, extra_, 3);
    const std::string log = req.private_dir + "/kernel.log";
    const std::string status = jail_status_file(req);
    auto out = co_await zygote_spawn(socket_, args, log, status, timeout_);
    if (out.handle) {
      out.handle->forked = true;
      common::log_debug("kernel={} helper={} msg=\"kernel forked by the fork server\"", req.kernel_id, out.handle->pid);
      co_return std::move(out.handle);
    }
    if (!out.may_fall_back) co_return std::move(out.handle);
    common::log_info("kernel={} msg=\"fork server unavailable; cold start\" error=\"{}\"", req.kernel_id,
                     out.handle.error().message);
    co_return co_await cold_->spawn(req);
  }

  // Either way the process is a cellgate-jail helper: same signals, same status file.
  void signal(const ProcessHandle& p, KernelSignal sig) override { cold_->signal(p, sig); }
  std::string exit_reason(const ProcessHandle& p, int wait_status) override { return cold_->exit_reason(p, wait_status); }
  std::function<bool()> release(const ProcessHandle& p) override { return cold_->release(p); }
  // The same jail, so the same cgroups: pausing and the warm pool's limits work alike.
  common::Status freeze(const ProcessHandle& p, bool frozen, Freezer kind) override {
    return cold_->freeze(p, frozen, kind);
  }
  common::Status set_limits(const ProcessHandle& p, const Limits& limits) override {
    return cold_->set_limits(p, limits);
  }
  uint64_t memory_usage(const ProcessHandle& p) override { return cold_->memory_usage(p); }
  double cpu_seconds(const ProcessHandle& p) override { return cold_->cpu_seconds(p); }
  std::optional<uid_t> kernel_uid(const ProcessHandle& p) override { return cold_->kernel_uid(p); }

 private:
  std::string socket_;
  std::unique_ptr<Spawner> cold_;
  std::vector<std::string> extra_;
  std::chrono::milliseconds timeout_;
};

}  // namespace

std::unique_ptr<Spawner> make_zygote_spawner(std::string socket_path, std::unique_ptr<Spawner> cold,
                                             std::vector<std::string> extra_args, std::chrono::milliseconds timeout) {
  return std::make_unique<ZygoteSpawner>(std::move(socket_path), std::move(cold), std::move(extra_args), timeout);
}

}  // namespace cellgate::launcher
