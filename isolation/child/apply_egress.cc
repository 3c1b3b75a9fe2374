// SPDX-License-Identifier: BSD-3-Clause
// apply_egress: the jail's proxy endpoint — a loopback listener made here, handed to cellgate-egress.
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "isolation/child/child_steps.h"

namespace cellgate::isolation::child {

int apply_egress_listener(const ChildPlan& plan, int* listen_fd) noexcept {
  // Made inside the jail's network namespace, so only this jail's loopback reaches it: the proxy
  // knows whose connection it is by which socket accepted it, never by what the kernel says.
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(plan.egress_port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0 || listen(fd, 128) < 0) {
    int err = errno;
    close(fd);
    return err;
  }
  // At the number the helper announced: a restarted proxy gets this listener back from the init
  // (pidfd_getfd, cellgate-jail --egress-attach), with what waits in its backlog.
  if (plan.egress_keep_fd >= 0 && plan.egress_keep_fd != fd) {
    int kept = dup3(fd, plan.egress_keep_fd, O_CLOEXEC);
    int err = errno;
    close(fd);
    if (kept < 0) return err;
    fd = kept;
  }
  // pidfd_open(getpid()) is this init in its own pid namespace (pidfd_open(2)); the proxy drops the
  // listener when it becomes readable, so the socket does not keep a dead jail's namespace alive.
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0));
  if (pidfd < 0) {
    int err = errno;
    close(fd);
    return err;
  }
  int fds[2] = {fd, pidfd};
  char byte = 'L';
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)];
  memset(control, 0, sizeof control);
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof fds);
  memcpy(CMSG_DATA(c), fds, sizeof fds);
  ssize_t sent;
  while ((sent = sendmsg(plan.egress_fd, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  int err = sent == 1 ? 0 : (sent < 0 ? errno : EIO);
  close(pidfd);
  close(plan.egress_fd);
  if (err != 0) {
    close(fd);
    return err;
  }
  *listen_fd = fd;
  return 0;
}

}  // namespace cellgate::isolation::child
