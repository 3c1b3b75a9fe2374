// SPDX-License-Identifier: BSD-3-Clause
// inherited_state: what a caller's process state would hand to a jailed command, and shedding it.
#include "isolation/inherited_state.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/personality.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>

#include "common/unique_fd.h"

namespace cellgate::isolation {

void shed_inherited_state() {
  // A realtime caller must not hand SCHED_FIFO/RR to a kernel (it could starve the host), and v1
  // cpu cgroups without rt_runtime refuse realtime tasks anyway (EINVAL on cgroup.procs).
  sched_param normal{};
  (void)::sched_setscheduler(0, SCHED_OTHER, &normal);
  // ADDR_NO_RANDOMIZE / READ_IMPLIES_EXEC (personality(2)).
  (void)::personality(PER_LINUX);
  // A negative oom_score_adj would shield the command from its memory cgroup's OOM killer
  // (proc(5)); raising it needs no privilege.
  common::UniqueFd fd(::open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC));
  char buf[32] = {};
  if (fd && ::read(fd.get(), buf, sizeof buf - 1) > 0 && std::atoi(buf) < 0) (void)::pwrite(fd.get(), "0", 1, 0);
  // The command cannot raise a negative nice or leave the real-time I/O class by itself.
  errno = 0;
  int nice = ::getpriority(PRIO_PROCESS, 0);
  if (errno == 0 && nice < 0) (void)::setpriority(PRIO_PROCESS, 0, 0);
  constexpr int kWhoProcess = 1, kClassShift = 13, kClassRt = 1, kClassNone = 0;
  long io = ::syscall(SYS_ioprio_get, kWhoProcess, 0);
  if (io >= 0 && (io >> kClassShift) == kClassRt) (void)::syscall(SYS_ioprio_set, kWhoProcess, 0, kClassNone);
}

}  // namespace cellgate::isolation
