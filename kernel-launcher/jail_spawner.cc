// SPDX-License-Identifier: BSD-3-Clause
// jail_spawner: kernels jailed by the single-threaded cellgate-jail helper (isolation/).
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "isolation/cgroup.h"
#include "kernel-launcher/jail_args.h"
#include "kernel-launcher/spawn_util.h"
#include "kernel-launcher/spawner.h"

namespace cellgate::launcher {
namespace {

using common::Errc;
using common::make_error;

class JailSpawner final : public Spawner {
 public:
  JailSpawner(std::string helper, std::vector<std::string> extra) : helper_(std::move(helper)), extra_(std::move(extra)) {}

  const char* name() const override { return "jail"; }

  boost::asio::awaitable<common::Result<ProcessHandle>> spawn(const SpawnRequest& req) override {
    co_return spawn_now(req);
  }

  void signal(const ProcessHandle& p, KernelSignal sig) override {
    if (p.pid <= 0) return;
    // The helper forwards SIGINT and SIGTERM to the kernel; SIGUSR1 makes it kill the whole jail.
    int signo = sig == KernelSignal::kInterrupt ? SIGINT : sig == KernelSignal::kTerminate ? SIGTERM : SIGUSR1;
    ::kill(p.pid, signo);
  }

  std::string exit_reason(const ProcessHandle& p, int) override {
    auto j = read_status(p);
    if (!j.is_object()) return "";
    if (auto r = j.find("reason"); r != j.end() && r->is_string()) return r->get<std::string>();
    if (auto m = j.find("message"); m != j.end() && m->is_string()) return m->get<std::string>();
    return "";
  }

  common::Status freeze(const ProcessHandle& p, bool frozen, Freezer kind) override {
    auto cg = cgroup_of(p);
    if (!cg) return cg.error();
    auto k = kind == Freezer::kV1 ? isolation::FreezerKind::kV1
             : kind == Freezer::kV2 ? isolation::FreezerKind::kV2 : isolation::FreezerKind::kAuto;
    return cg->set_frozen(frozen, k);
  }

  common::Status set_limits(const ProcessHandle& p, const Limits& l) override {
    auto cg = cgroup_of(p);
    if (!cg) return cg.error();
    return cg->set_limits(isolation::CgroupLimits{l.memory_bytes, l.pids, l.cpus});
  }

  uint64_t memory_usage(const ProcessHandle& p) override {
    auto cg = cgroup_of(p);
    return cg ? cg->memory_usage() : 0;
  }

  double cpu_seconds(const ProcessHandle& p) override {
    auto cg = cgroup_of(p);
    return cg ? cg->cpu_seconds() : 0;
  }

  std::optional<uid_t> kernel_uid(const ProcessHandle& p) override {
    auto j = read_status(p);
    auto u = j.is_object() ? j.find("host_uid") : j.end();
    if (!j.is_object() || u == j.end() || !u->is_number_unsigned() || u->get<uint64_t>() == 0) return std::nullopt;
    return static_cast<uid_t>(u->get<uint64_t>());
  }

  std::function<bool()> release(const ProcessHandle& p) override {
    auto j = read_status(p);
    auto c = j.is_object() ? j.find("cgroup") : j.end();
    if (!j.is_object() || c == j.end() || !c->is_string() || c->get<std::string>().empty()) return {};
    return [dir = c->get<std::string>()] { return isolation::Cgroup::release(dir); };
  }

 private:
  // posix_spawn: the io thread waits for the helper's exec, not for its work.
  common::Result<ProcessHandle> spawn_now(const SpawnRequest& req) {
    // The helper's own environment is empty: the kernel's comes only through its --env-file.
    if (auto st = write_env_file(jail_env_file(req), req.env); !st) return st.error();
    std::vector<std::string> argv = {helper_};
    auto args = jail_args(req, extra_, 3);
    argv.insert(argv.end(), args.begin(), args.end());

    int pipefd[2];
    if (::pipe2(pipefd, O_CLOEXEC) != 0) return make_error(Errc::kInternal, "pipe", errno);
    common::UniqueFd read_end(pipefd[0]), write_end(pipefd[1]);
    std::map<std::string, std::string> helper_env = {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}};
    auto h = spawn_process(argv, helper_env, "/", req.private_dir + "/kernel.log", write_end.get());
    if (!h) return h;
    h->ready_fd = std::move(read_end);
    h->status_file = jail_status_file(req);
    return h;
  }

  // The status file lives in the gateway's private dir, out of the kernel's reach (see spawn()).
  static nlohmann::json read_status(const ProcessHandle& p) {
    std::ifstream in(p.status_file);
    if (!in) return nullptr;
    std::stringstream ss;
    ss << in.rdbuf();
    auto j = nlohmann::json::parse(ss.str(), nullptr, false);
    return j.is_discarded() ? nlohmann::json() : j;
  }

  static common::Result<isolation::Cgroup> cgroup_of(const ProcessHandle& p) {
    auto j = read_status(p);
    auto c = j.is_object() ? j.find("cgroup") : j.end();
    if (!j.is_object() || c == j.end() || !c->is_string() || c->get<std::string>().empty())
      return make_error(Errc::kUnavailable, "the kernel's jail has no cgroup");
    return isolation::Cgroup::attach(c->get<std::string>());
  }

  std::string helper_;
  std::vector<std::string> extra_;
};

}  // namespace

std::unique_ptr<Spawner> make_jail_spawner(std::string helper_path, std::vector<std::string> extra_args) {
  return std::make_unique<JailSpawner>(std::move(helper_path), std::move(extra_args));
}

}  // namespace cellgate::launcher
