// SPDX-License-Identifier: BSD-3-Clause
// apply_system: loopback, rlimits, the report channel and unmapping memory in the child.
#include <errno.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "isolation/child/child_steps.h"

namespace cellgate::isolation::child {

void report(int fd, ReportKind kind, Stage stage, int err, uint32_t detail) noexcept {
  if (fd < 0) return;
  ChildReport rec{static_cast<uint32_t>(kind), static_cast<uint32_t>(stage), err, detail};
  // MSG_NOSIGNAL: a dead helper must not turn this into SIGPIPE.
  while (send(fd, &rec, sizeof rec, MSG_NOSIGNAL) < 0 && errno == EINTR) {
  }
}

void fail(const ChildPlan& plan, Stage stage, int err, uint32_t detail) noexcept {
  report(plan.report_fd, ReportKind::kError, stage, err, detail);
  _exit(127);
}

int apply_loopback_up() noexcept {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  ifreq req{};
  req.ifr_name[0] = 'l';
  req.ifr_name[1] = 'o';
  int err = 0;
  if (ioctl(fd, SIOCGIFFLAGS, &req) < 0) {
    err = errno;
  } else {
    req.ifr_flags = static_cast<short>(req.ifr_flags | IFF_UP | IFF_RUNNING);
    if (ioctl(fd, SIOCSIFFLAGS, &req) < 0) err = errno;
  }
  close(fd);
  return err;
}

int apply_rlimits(const Rlimit* limits, size_t n) noexcept {
  for (size_t i = 0; i < n; ++i) {
    if (setrlimit(static_cast<__rlimit_resource>(limits[i].resource), &limits[i].value) < 0)
      return errno;
  }
  return 0;
}

void apply_unmap(const MemRange* ranges, size_t n) noexcept {
  for (size_t i = 0; ranges != nullptr && i < n; ++i) munmap(reinterpret_cast<void*>(ranges[i].start), ranges[i].len);
}

}  // namespace cellgate::isolation::child
