// SPDX-License-Identifier: BSD-3-Clause
// abstract_unix: tries to connect to a host abstract unix socket (@NAME); abstract names live in the
// network namespace, so a jail with its own netns must not see it.
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "probe.h"

int main(int argc, char** argv) {
  if (argc != 2) probe_usage("abstract_unix NAME");
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) {
    probe_report(0, "socket: %s", strerror(errno));
    return probe_verdict();
  }
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  size_t n = strlen(argv[1]);
  if (n + 1 > sizeof a.sun_path) probe_usage("name too long");
  memcpy(a.sun_path + 1, argv[1], n);
  char what[160];
  snprintf(what, sizeof what, "connect @%s", argv[1]);
  probe_attempt(what, connect(s, (struct sockaddr*)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)));
  close(s);
  return probe_verdict();
}
