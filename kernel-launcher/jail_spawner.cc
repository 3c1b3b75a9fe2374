// SPDX-License-Identifier: BSD-3-Clause
// jail_spawner: kernels jailed by the single-threaded cellgate-jail helper (isolation/).
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

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

  common::Result<ProcessHandle> spawn(const SpawnRequest& req) override {
    // The helper's own environment is empty: the kernel's comes only through --env.
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

  void signal(const ProcessHandle& p, KernelSignal sig) override {
    if (p.pid <= 0) return;
    // The helper forwards SIGINT and SIGTERM to the kernel; SIGUSR1 makes it kill the whole jail.
    int signo = sig == KernelSignal::kInterrupt ? SIGINT : sig == KernelSignal::kTerminate ? SIGTERM : SIGUSR1;
    ::kill(p.pid, signo);
  }

  std::string exit_reason(const ProcessHandle& p, int) override {
    std::ifstream in(p.status_file);
    if (!in) return "";
    std::stringstream ss;
    ss << in.rdbuf();
    auto j = nlohmann::json::parse(ss.str(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) return "";
    if (auto r = j.find("reason"); r != j.end() && r->is_string()) return r->get<std::string>();
    if (auto m = j.find("message"); m != j.end() && m->is_string()) return m->get<std::string>();
    return "";
  }

 private:
  std::string helper_;
  std::vector<std::string> extra_;
};

}  // namespace

std::unique_ptr<Spawner> make_jail_spawner(std::string helper_path, std::vector<std::string> extra_args) {
  return std::make_unique<JailSpawner>(std::move(helper_path), std::move(extra_args));
}

}  // namespace cellgate::launcher
