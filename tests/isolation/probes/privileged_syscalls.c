// SPDX-License-Identifier: BSD-3-Clause
// privileged_syscalls: host-global knobs that only need a capability check to be reached. Each call
// is chosen to change nothing even where it is allowed (bare on a host, as root): settimeofday with
// no arguments, syslog read into a tiny buffer, init_module of an empty image, swapoff of a missing
// path, acct of a missing file (fails before switching anything), sethostname to the current name.
// Held = EPERM or ENOSYS.
#include <fcntl.h>
#include <linux/module.h>
#include <sys/klog.h>
#include <sys/swap.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "probe.h"

static void expect_denied(const char* what, long rc) {
  int err = errno;
  int held = rc < 0 && (err == EPERM || err == ENOSYS || err == EACCES);
  probe_report(!held, "%s: %s", what, rc < 0 ? strerror(err) : "allowed");
}

int main(void) {
  expect_denied("settimeofday(NULL, NULL)", syscall(SYS_settimeofday, NULL, NULL));
  char buf[16];
  expect_denied("syslog(READ_ALL) (dmesg)", klogctl(3, buf, sizeof buf));
  expect_denied("init_module(empty image)", syscall(SYS_init_module, "", 0, ""));
  expect_denied("swapoff(/nonexistent)", swapoff("/nonexistent-cellgate-probe"));
  expect_denied("acct(/nonexistent)", acct("/nonexistent-cellgate-probe/acct"));
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  expect_denied("sethostname(same name)", sethostname(host, strlen(host)));
  // /dev/kmsg writes go to the host's kernel log; opening it (nothing is written) must fail.
  int kmsg = open("/dev/kmsg", O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (kmsg >= 0) close(kmsg);
  probe_report(kmsg >= 0, "open /dev/kmsg for writing: %s", kmsg >= 0 ? "allowed" : strerror(errno));
  return probe_verdict();
}
