// SPDX-License-Identifier: BSD-3-Clause
// tiocsti_probe: tries ioctl(TIOCSTI) (inject input into a terminal) on a fresh pty and on stdin,
// including the 64-bit-garbage-in-the-upper-half variant that naive filters miss.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe.h"

int main(void) {
  char c = 'x';
  int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) {
    probe_report(0, "no pty to try on: %s", strerror(errno));
  } else {
    int slave = open(ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (slave < 0) {
      probe_report(0, "open pty slave: %s", strerror(errno));
    } else {
      probe_attempt("ioctl(pty, TIOCSTI)", ioctl(slave, TIOCSTI, &c));
      unsigned long cmd = 0xffffffff00000000UL | TIOCSTI;
      probe_attempt("ioctl(pty, TIOCSTI | high bits)", syscall(SYS_ioctl, slave, cmd, &c));
      close(slave);
    }
    close(master);
  }
  if (isatty(0)) probe_attempt("ioctl(stdin, TIOCSTI)", ioctl(0, TIOCSTI, &c));
  return probe_verdict();
}
