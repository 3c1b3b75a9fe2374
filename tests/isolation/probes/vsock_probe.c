// SPDX-License-Identifier: BSD-3-Clause
// vsock_probe: AF_VSOCK is a channel to the hypervisor and other VMs that the jail's network
// namespace does not cover. Only socket creation is tried: nothing is ever connected or sent.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "probe.h"

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

int main(void) {
  int s = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s >= 0) close(s);
  probe_attempt("socket(AF_VSOCK, SOCK_STREAM)", s);
  s = socket(AF_VSOCK, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s >= 0) close(s);
  // EAFNOSUPPORT/ESOCKTNOSUPPORT: no such transport here, also a closed door.
  probe_attempt("socket(AF_VSOCK, SOCK_DGRAM)", s);
  int fd = open("/dev/vsock", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) close(fd);
  probe_attempt("open /dev/vsock", fd);
  return probe_verdict();
}
