// SPDX-License-Identifier: BSD-3-Clause
// child_steps: the unprivileged child-world steps, run in a forked process.
#include "isolation/child/child_steps.h"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace cellgate::isolation::child;

namespace {
// Runs fn in a child process and returns its exit code (fn's return value).
int in_child(int (*fn)()) {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(fn());
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}
bool open_fd(int fd) { return ::fcntl(fd, F_GETFD) >= 0; }
}  // namespace

TEST_CASE("apply_close_fds_except keeps stdio and the listed fds only", "[isolation]") {
  int rc = in_child([]() -> int {
    int null = ::open("/dev/null", O_RDONLY);
    for (int fd : {10, 11, 12, 20, 21}) ::dup2(null, fd);
    const int keep[] = {20, -1, 11};
    if (apply_close_fds_except(keep, 3) != 0) return 1;
    if (!open_fd(0) || !open_fd(1) || !open_fd(2)) return 2;
    if (!open_fd(11) || !open_fd(20)) return 3;
    if (open_fd(null) || open_fd(10) || open_fd(12) || open_fd(21)) return 4;
    return 0;
  });
  CHECK(rc == 0);
}

TEST_CASE("apply_rlimits sets the planned limits", "[isolation]") {
  int rc = in_child([]() -> int {
    const Rlimit limits[] = {{RLIMIT_CORE, {0, 0}}, {RLIMIT_NOFILE, {64, 64}}};
    if (apply_rlimits(limits, 2) != 0) return 1;
    rlimit r{};
    ::getrlimit(RLIMIT_NOFILE, &r);
    if (r.rlim_cur != 64 || r.rlim_max != 64) return 2;
    ::getrlimit(RLIMIT_CORE, &r);
    return r.rlim_max == 0 ? 0 : 3;
  });
  CHECK(rc == 0);
}

TEST_CASE("report sends one fixed-size record that the parent can decode", "[isolation]") {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
  report(sv[1], ReportKind::kError, Stage::kPivotRoot, 2, 5);
  ChildReport rec{};
  REQUIRE(::recv(sv[0], &rec, sizeof rec, 0) == static_cast<ssize_t>(sizeof rec));
  CHECK(rec.kind == static_cast<uint32_t>(ReportKind::kError));
  CHECK(rec.stage == static_cast<uint32_t>(Stage::kPivotRoot));
  CHECK(rec.err == 2);
  CHECK(rec.detail == 5);
  ::close(sv[0]);
  report(sv[1], ReportKind::kError, Stage::kExec, 1, 0);  // a dead reader: no SIGPIPE
  ::close(sv[1]);
}
