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

// EAFNOSUPPORT comes from the kernel before any filter could matter (a filter answers EPERM here):
// no vsock in this kernel (or its module is not available), so there is no door to hold.
static int try_socket(const char* what, int type) {
  int s = socket(AF_VSOCK, type | SOCK_CLOEXEC, 0);
  int err = errno;
  if (s >= 0) close(s);
  if (s < 0 && err == EAFNOSUPPORT) {
    probe_unavailable("%s: no AF_VSOCK in this kernel (%s)", what, strerror(err));
    return 0;
  }
  errno = err;
  probe_attempt(what, s);
  return 1;
}

int main(void) {
  int have_vsock = try_socket("socket(AF_VSOCK, SOCK_STREAM)", SOCK_STREAM);
  have_vsock |= try_socket("socket(AF_VSOCK, SOCK_DGRAM)", SOCK_DGRAM);
  int fd = open("/dev/vsock", O_RDONLY | O_CLOEXEC);
  int err = errno;
  if (fd >= 0) close(fd);
  if (fd < 0 && err == ENOENT && !have_vsock) {
    // The vsock core registers /dev/vsock: without AF_VSOCK there is none anywhere.
    probe_unavailable("open /dev/vsock: no vsock in this kernel");
  } else {
    errno = err;
    probe_attempt("open /dev/vsock", fd);
  }
  return probe_verdict();
}
