// SPDX-License-Identifier: BSD-3-Clause
// supervisor: the helper's loop — child reports, signals (signalfd), the init's exit (pidfd).
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>

#include "isolation/child/child_steps.h"
#include "isolation/child_error.h"
#include "isolation/jail.h"
#include "isolation/status_json.h"

namespace cellgate::isolation {
namespace {

constexpr int kSetupTimeoutMs = 30000;
constexpr int kRelayDrainMs = 2000;  // per idle wait after the jail ended (its writers are dead)

int pidfd_signal(int pidfd, int sig) { return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0)); }

sigset_t handled_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) sigaddset(&set, sig);
  return set;
}

// One report record, with the sender's pid (in our namespace) from SCM_CREDENTIALS.
// Returns 0 on EOF, -1 on error, else the byte count.
ssize_t receive_report(int fd, child::ChildReport& out, pid_t& sender) {
  char data[64];
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
  iovec iov{data, sizeof data};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  while ((n = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  if (n <= 0) return n;
  auto rec = decode_report(data, static_cast<size_t>(n));
  if (!rec) return -1;
  out = *rec;
  sender = -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
      ucred cred;
      std::memcpy(&cred, CMSG_DATA(c), sizeof cred);
      sender = cred.pid;
    }
  }
  return n;
}

}  // namespace

int Jail::fail(const SetupFailure& f) {
  std::fprintf(stderr, "cellgate-jail: %s\n", f.message.c_str());
  const std::string json = failed_json(f.stage, f.err, f.message);
  write_status_file(options_.status_file, json);
  write_ready_line(ready_fd_, json);
  ready_fd_ = -1;
  if (pidfd_) {
    pidfd_signal(pidfd_.get(), SIGKILL);
    siginfo_t info{};
    ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &info, WEXITED);
  }
  if (cgroup_) cgroup_->remove();
  return f.exit_code;
}

int Jail::run() {
  ::signal(SIGPIPE, SIG_IGN);
  sigset_t set = handled_signals();
  // Blocked before clone so no signal kills us between clone and the loop; the child
  // sets its own mask (init blocks, the kernel unblocks everything before exec).
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
  signal_fd_.reset(::signalfd(-1, &set, SFD_CLOEXEC));
  if (!signal_fd_) return fail(SetupFailure{"prepare", errno, std::string("signalfd: ") + std::strerror(errno)});
  if (auto f = prepare()) return fail(*f);
  if (auto f = spawn()) return fail(*f);
  return supervise();
}

int Jail::supervise() {
  const auto start = std::chrono::steady_clock::now();
  bool reporting = true;  // until EOF on the report socket (= exec done, or failure)
  std::optional<SetupFailure> failure;
  bool init_exited = false;
  for (;;) {
    // While reports are pending, init's exit is only noted: EOF on the report socket follows.
    pollfd fds[5] = {{init_exited ? -1 : pidfd_.get(), POLLIN, 0}, {signal_fd_.get(), POLLIN, 0},
                     {reporting ? report_.get() : -1, POLLIN, 0}, {-1, POLLIN, 0}, {-1, POLLIN, 0}};
    int timeout = relay_.arm(&fds[3]);  // >= 0 while a pipe is held back by the log's rate bound
    auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    if (reporting) {
      int setup_left = std::max(0, kSetupTimeoutMs - static_cast<int>(spent.count()));
      if (timeout < 0 || setup_left < timeout) timeout = setup_left;
    }
    int n = ::poll(fds, 5, timeout);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 && reporting && spent.count() >= kSetupTimeoutMs)
      return fail(SetupFailure{"timeout", ETIMEDOUT, "setup did not finish within 30 s"});
    if (n == 0) continue;
    if (reporting && (fds[2].revents & (POLLIN | POLLHUP)) != 0) {
      child::ChildReport rec{};
      pid_t sender = -1;
      ssize_t got = receive_report(report_.get(), rec, sender);
      if (got > 0 && rec.kind == static_cast<uint32_t>(child::ReportKind::kHello)) {
        kernel_pid_ = sender;
      } else if (got > 0 && !failure) {
        std::string target;
        if (rec.stage == static_cast<uint32_t>(child::Stage::kMount) && rec.detail < plan_->mounts().ops().size())
          target = plan_->mounts().ops()[rec.detail].target + std::strlen(kNewRoot);
        if (rec.stage == static_cast<uint32_t>(child::Stage::kMount) && target.empty()) target = "/";
        if (rec.stage == static_cast<uint32_t>(child::Stage::kExec)) target = options_.command[0];
        ChildFailure f = describe_failure(rec, target);
        failure = SetupFailure{f.stage, f.err, f.message};
      } else if (got <= 0) {
        reporting = false;
        report_.reset();
        if (failure) return fail(*failure);
        if (kernel_pid_ <= 0) return fail(SetupFailure{"init", ECHILD, "init: the jail exited during setup"});
        const std::string json = running_json(::getpid(), init_pid_, kernel_pid_, slot_.base + kSandboxId,
                                              cgroup_ ? cgroup_->paths().unified : "", egress_keep_fd_);
        write_status_file(options_.status_file, json);
        write_ready_line(ready_fd_, json);
        ready_fd_ = -1;
        // Off the start's path: init has forked the kernel, which holds its own copy.
        child::apply_unmap(hooks_.shed, hooks_.n_shed);
      }
    }
    if ((fds[1].revents & POLLIN) != 0) {
      signalfd_siginfo si{};
      if (::read(signal_fd_.get(), &si, sizeof si) == sizeof si) {
        int sig = static_cast<int>(si.ssi_signo);
        if (sig == SIGUSR1) {
          killed_ = true;
          if (!cgroup_ || !cgroup_->kill_all()) pidfd_signal(pidfd_.get(), SIGKILL);
        } else {
          pidfd_signal(pidfd_.get(), sig);  // init forwards it to the kernel's process group
        }
      }
    }
    relay_.pump(&fds[3]);
    if ((fds[0].revents & POLLIN) != 0) init_exited = true;
    if (init_exited && !reporting) break;
  }
  siginfo_t info{};
  ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &info, WEXITED);
  // init's death kills the rest of its pid namespace, so the pipes reach EOF promptly.
  relay_.drain(kRelayDrainMs);
  int status = 0;
  bool have_kernel_status = ::read(exit_.get(), &status, sizeof status) == sizeof status;
  std::optional<int> code, sig;
  if (have_kernel_status) {
    if (WIFEXITED(status)) code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status)) sig = WTERMSIG(status);
  } else if (info.si_code == CLD_EXITED) {
    code = info.si_status;
  } else {
    sig = info.si_status;
  }
  // A limit is the reason only for an abnormal end: a kernel that hit pids.max once and later
  // shut down cleanly did not die of it.
  bool clean = code && *code == 0;
  std::string reason = killed_ ? "killed" : (cgroup_ && !clean ? cgroup_->exit_reason() : "");
  write_status_file(options_.status_file, exited_json(code, sig, reason));
  if (cgroup_) cgroup_->remove();
  return code ? *code : 128 + sig.value_or(0);
}

}  // namespace cellgate::isolation
