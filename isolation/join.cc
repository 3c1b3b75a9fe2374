// SPDX-License-Identifier: BSD-3-Clause
// join: enter a running jail's pid namespace and cgroups, fork the command, supervise it.
#include "isolation/join.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "isolation/child/run_join.h"
#include "isolation/clone_into.h"
#include "isolation/child_error.h"
#include "isolation/inherited_state.h"
#include "isolation/seccomp_policy.h"

namespace cellgate::isolation {
namespace {

constexpr int kJoinNamespaces = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;

SetupFailure sys_failure(const std::string& stage, int err, const std::string& what = "") {
  return SetupFailure{stage, err, (what.empty() ? stage : what) + ": " + std::strerror(err)};
}

int pidfd_signal(int pidfd, int sig) { return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0)); }

// The jail's own limits (its init's NOFILE and FSIZE, set from the kernelspec's policy and
// options), never above ours: raising a hard limit would need CAP_SYS_RESOURCE in the initial user
// namespace, which the child no longer has after setns. The rest (CORE, RTPRIO, NICE) is what
// every jail gets: plan_rlimits is the jail's own planning, not a copy of it.
std::vector<child::Rlimit> jail_rlimits(pid_t init) {
  rlimit nofile{}, fsize{}, our_nofile{}, our_fsize{};
  ::getrlimit(RLIMIT_NOFILE, &our_nofile);
  ::getrlimit(RLIMIT_FSIZE, &our_fsize);
  if (::prlimit(init, RLIMIT_NOFILE, nullptr, &nofile) < 0) nofile = our_nofile;
  if (::prlimit(init, RLIMIT_FSIZE, nullptr, &fsize) < 0) fsize = our_fsize;
  ResolvedLimits limits;
  limits.nofile = std::min(nofile.rlim_max, our_nofile.rlim_max);
  limits.fsize = std::min(fsize.rlim_max, our_fsize.rlim_max);
  return plan_rlimits(limits, our_nofile.rlim_max);
}

bool in_cellgate_cgroup(pid_t pid) {
  common::UniqueFd fd(::open(("/proc/" + std::to_string(pid) + "/cgroup").c_str(), O_RDONLY | O_CLOEXEC));
  char buf[4096];
  ssize_t n = fd ? ::read(fd.get(), buf, sizeof buf) : -1;
  return n > 0 && std::string(buf, static_cast<size_t>(n)).find("/cellgate/") != std::string::npos;
}

}  // namespace

Join::Join(JailOptions options, std::optional<Policy> policy)
    : options_(std::move(options)), policy_(std::move(policy)) {}

int Join::fail(const SetupFailure& f) {
  std::fprintf(stderr, "cellgate-jail: %s\n", f.message.c_str());
  if (pidfd_) {
    pidfd_signal(pidfd_.get(), SIGKILL);
    siginfo_t info{};
    ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &info, WEXITED);
  }
  return f.exit_code;
}

int Join::run() {
  ::signal(SIGPIPE, SIG_IGN);
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) sigaddset(&set, sig);
  // Blocked before the fork: the child inherits the mask and resets it just before exec.
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
  signal_fd_.reset(::signalfd(-1, &set, SFD_CLOEXEC));
  if (!signal_fd_) return fail(sys_failure("prepare", errno, "signalfd"));
  if (auto f = prepare()) return fail(*f);
  if (auto f = spawn()) return fail(*f);
  return supervise();
}

std::optional<SetupFailure> Join::prepare() {
  shed_inherited_state();  // what the jail sheds before its clone, we shed before our fork
  auto target = open_join_target(options_.join);
  if (!target) return SetupFailure{"join", target.error().sys_errno, "join: " + target.error().message};
  target_.emplace(std::move(target.value()));
  const JoinStatus& st = target_->status;
  if (!st.cgroup.empty()) {
    auto cg = Cgroup::attach(st.cgroup);
    if (!cg) return SetupFailure{"cgroup", cg.error().sys_errno, cg.error().message};
    if (!cg->holds(st.init_pid))
      return SetupFailure{"cgroup", 0, "cgroup: jail init " + std::to_string(st.init_pid) + " is not in " + st.cgroup};
    cgroup_.emplace(std::move(cg.value()));
  } else if (in_cellgate_cgroup(st.init_pid)) {
    return SetupFailure{"cgroup", 0, "cgroup: the status file names no cgroup but the jail has one"};
  }
  if (!policy_) {
    auto recorded = load_recorded_policy(options_.join);
    if (!recorded) return SetupFailure{"join", recorded.error().sys_errno, "join: " + recorded.error().message};
    if (auto names = check_syscall_names(*recorded); !names) return SetupFailure{"join", 0, "join: " + names.error().message};
    policy_.emplace(std::move(recorded.value()));
  }
  auto filter = cached_seccomp_bpf(*policy_, std::string(kRunDir) + "/seccomp");
  if (!filter) return SetupFailure{"seccomp", filter.error().sys_errno, filter.error().message};
  auto plan = JailPlan::build_join(options_, *policy_, std::move(filter.value()), jail_rlimits(st.init_pid));
  if (!plan && plan.error().code == common::Errc::kBadRequest) return SetupFailure{"options", 0, plan.error().message, 125};
  if (!plan) return SetupFailure{"plan", plan.error().sys_errno, plan.error().message};
  plan_.emplace(std::move(plan.value()));
  return std::nullopt;
}

std::optional<SetupFailure> Join::spawn() {
  int sync[2], report[2];
  if (::pipe2(sync, O_CLOEXEC) < 0) return sys_failure("clone", errno, "pipe");
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, report) < 0) return sys_failure("clone", errno, "socketpair");
  common::UniqueFd sync_r(sync[0]), report_child(report[1]);
  sync_.reset(sync[1]);
  report_.reset(report[0]);
  child::JoinChildPlan jp{plan_->child_plan(sync_r.get(), report_child.get(), -1), target_->init_pidfd.get(),
                          kJoinNamespaces};
  // Our children are born in the jail's pid namespace (pid_for_children); we stay outside,
  // with the host's view, to place the child in the cgroups and supervise it.
  if (::setns(target_->init_pidfd.get(), CLONE_NEWPID) < 0) return sys_failure("setns", errno);

  // Born in the v2 dir: counted by its pids limit from the start. EAGAIN: that limit is reached;
  // ENOMEM: the jail's init is gone (its pid namespace is dying); neither is retried without it.
  common::UniqueFd v2_dir = open_cgroup_dir(cgroup_ ? cgroup_->paths().unified : std::string());
  const Cloned cloned =
      clone_into_cgroup(0, v2_dir.get(), [](int err) { return err == EAGAIN || err == ENOMEM; });
  const long pid = cloned.pid;
  const bool placed_v2 = cloned.placed;
  if (pid < 0) return sys_failure("clone", errno);
  if (pid == 0) {
    ::close(sync[1]);
    ::close(report[0]);
    child::run_join(jp);
  }
  child_pid_ = static_cast<pid_t>(pid);
  pidfd_.reset(cloned.pidfd);
  if (cgroup_) {
    if (auto s = cgroup_->place(child_pid_, placed_v2); !s) return SetupFailure{"cgroup", s.error().sys_errno, s.error().message};
  }
  char go = 1;
  if (::write(sync_.get(), &go, 1) != 1) return sys_failure("sync", errno);
  return std::nullopt;
}

int Join::supervise() {
  for (;;) {
    pollfd fds[2] = {{pidfd_.get(), POLLIN, 0}, {signal_fd_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if ((fds[1].revents & POLLIN) != 0) {
      signalfd_siginfo si{};
      if (::read(signal_fd_.get(), &si, sizeof si) == sizeof si) {
        int sig = static_cast<int>(si.ssi_signo);
        if (sig == SIGUSR1) sig = SIGKILL;  // as for the jail: end it at once
        // The child leads its own process group once it has called setsid(); before that, it alone.
        if (::kill(-child_pid_, sig) < 0) pidfd_signal(pidfd_.get(), sig);
      }
    }
    if ((fds[0].revents & POLLIN) != 0) break;
  }
  siginfo_t info{};
  // While the command is a zombie its pid, and so its process-group id, cannot be reused: end
  // what it left behind in its group (`cmd &` would otherwise keep our caller's stdout pipe open
  // and live on in the jail). Daemons that called setsid(2) themselves are not touched.
  ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &info, WEXITED | WNOWAIT);
  ::kill(-child_pid_, SIGKILL);
  ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &info, WEXITED);
  // A failure record from the child (it never exec'd): joining failed.
  char data[64];
  ssize_t n = ::recv(report_.get(), data, sizeof data, MSG_DONTWAIT);
  if (n > 0) {
    auto rec = decode_report(data, static_cast<size_t>(n));
    if (rec && rec->kind == static_cast<uint32_t>(child::ReportKind::kError)) {
      std::string target = rec->stage == static_cast<uint32_t>(child::Stage::kExec) ? options_.command[0] : "";
      ChildFailure f = describe_failure(*rec, target);
      std::fprintf(stderr, "cellgate-jail: %s\n", f.message.c_str());
      return 126;
    }
  }
  if (info.si_code == CLD_EXITED) return info.si_status;
  return 128 + info.si_status;
}

}  // namespace cellgate::isolation
