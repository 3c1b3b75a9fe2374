// SPDX-License-Identifier: BSD-3-Clause
// spawn_util: posix_spawn with an exact environment, a new session and a log file for stdio.
#include "kernel-launcher/spawn_util.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/core.h>

#include "common/assert.h"

namespace cellgate::launcher {

using common::Errc;
using common::make_error;

common::UniqueFd open_pidfd(pid_t pid) {
  return common::UniqueFd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
}

std::string resolve_program(const std::string& prog, const std::map<std::string, std::string>& env) {
  if (prog.find('/') != std::string::npos) return prog;
  auto it = env.find("PATH");
  std::string path = it != env.end() ? it->second : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string candidate = path.substr(start, end - start) + "/" + prog;
    if (end > start && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return prog;
}

common::Result<pid_t> spawn_in_session(const std::vector<std::string>& argv,
                                       const std::map<std::string, std::string>& env, const std::string& cwd,
                                       const std::vector<int>& child_fds) {
  if (argv.empty()) return make_error(Errc::kBadRequest, "empty command");
  const std::string program = resolve_program(argv[0], env);
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> cenv;
  for (auto& e : env_strings) cenv.push_back(e.data());
  cenv.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  for (size_t i = 0; i < child_fds.size(); ++i) {
    CELLGATE_ASSERT(child_fds[i] == static_cast<int>(i) || child_fds[i] >= static_cast<int>(child_fds.size()));
    posix_spawn_file_actions_adddup2(&fa, child_fds[i], static_cast<int>(i));
  }
  // Nothing else of the gateway crosses: Asio's sockets (the listener, clients' connections) are not
  // close-on-exec, and a kernel holding them could accept() the gateway's own connections.
  posix_spawn_file_actions_addclosefrom_np(&fa, static_cast<int>(child_fds.size()));
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  // A new session: the child must not die with the gateway's terminal or process group, and must not
  // inherit the gateway's signal dispositions or mask.
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, program.c_str(), &fa, &attr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return make_error(Errc::kBadRequest, fmt::format("cannot run {}: {}", argv[0], ::strerror(rc)), rc);
  return pid;
}

common::Result<ProcessHandle> spawn_process(const std::vector<std::string>& argv,
                                            const std::map<std::string, std::string>& env, const std::string& cwd,
                                            const std::string& log_path, int extra_fd) {
  common::UniqueFd null_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  common::UniqueFd log_fd(::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!null_fd || !log_fd) return make_error(Errc::kInternal, fmt::format("open {}", log_path), errno);
  std::vector<int> fds{null_fd.get(), log_fd.get(), log_fd.get()};
  if (extra_fd >= 0) fds.push_back(extra_fd);
  auto pid = spawn_in_session(argv, env, cwd, fds);
  if (!pid) return make_error(Errc::kInternal, pid.error().message, pid.error().sys_errno);

  ProcessHandle h;
  h.pid = *pid;
  h.pidfd = open_pidfd(h.pid);
  if (!h.pidfd) {
    int err = errno;
    ::kill(h.pid, SIGKILL);
    ::waitpid(h.pid, nullptr, 0);
    return make_error(Errc::kInternal, "pidfd_open", err);
  }
  return h;
}

int reap(const ProcessHandle& p) {
  if (!p.is_child || p.pid <= 0) return -1;
  int status = 0;
  pid_t r = ::waitpid(p.pid, &status, WNOHANG);
  return r == p.pid ? status : -1;
}

std::string describe_wait_status(int status) {
  if (status < 0) return "exited";
  if (WIFEXITED(status)) return fmt::format("exit code {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), ::strsignal(WTERMSIG(status)));
  return "exited";
}

common::Status Spawner::freeze(const ProcessHandle&, bool, Freezer) {
  return common::make_error(common::Errc::kUnavailable, std::string(name()) + " spawner cannot pause kernels");
}

common::Status Spawner::set_limits(const ProcessHandle&, const Limits&) {
  return common::make_error(common::Errc::kUnavailable, std::string(name()) + " spawner cannot change limits");
}

uint64_t Spawner::memory_usage(const ProcessHandle&) { return 0; }

double Spawner::cpu_seconds(const ProcessHandle&) { return 0; }

std::optional<uid_t> Spawner::kernel_uid(const ProcessHandle&) { return ::geteuid(); }

std::function<bool()> Spawner::release(const ProcessHandle&) { return {}; }

}  // namespace cellgate::launcher
