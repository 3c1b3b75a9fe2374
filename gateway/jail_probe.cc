// SPDX-License-Identifier: BSD-3-Clause
// jail_probe: whether a jail can start on this host now (for /readyz), by starting a tiny one.
#include "gateway/jail_probe.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "common/unique_fd.h"

extern char** environ;

namespace cellgate::gateway {

using common::Errc;
using common::make_error;

common::Status probe_jail(const JailProbeOptions& options) {
  std::vector<std::string> args{options.helper, "--name", "readyz-probe-" + std::to_string(::getpid()),
                                "--memory", "64M", "--pids", "16"};
  if (!options.policy.empty()) args.insert(args.end(), {"--policy", options.policy});
  args.insert(args.end(), {"--", "/usr/bin/true"});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return make_error(Errc::kInternal, "pipe2", errno);
  common::UniqueFd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), 2);
  pid_t pid = -1;
  const int err = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  write_end.reset();
  if (err != 0) return make_error(Errc::kUnavailable, "cannot run " + options.helper + ": " + std::strerror(err), err);

  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);  // the helper's jail goes with it (PDEATHSIG)
      ::waitpid(pid, &status, 0);
      return make_error(Errc::kTimeout, "a probe jail did not finish within " + std::to_string(options.timeout.count()) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return common::ok();
  char line[512] = {};
  (void)::fcntl(read_end.get(), F_SETFL, O_NONBLOCK);
  const ssize_t n = ::read(read_end.get(), line, sizeof line - 1);
  std::string why = n > 0 ? std::string(line, static_cast<size_t>(n)) : "exit status " + std::to_string(status);
  if (auto nl = why.find('\n'); nl != std::string::npos) why.resize(nl);
  return make_error(Errc::kUnavailable, "a probe jail failed: " + why);
}

}  // namespace cellgate::gateway
