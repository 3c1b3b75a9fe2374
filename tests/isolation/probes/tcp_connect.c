// SPDX-License-Identifier: BSD-3-Clause
// tcp_connect: tries a TCP connect to an address the host listens on (the jail's 127.0.0.1 is its own).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "probe.h"

int main(int argc, char** argv) {
  if (argc != 3) probe_usage("tcp_connect IPV4 PORT");
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) {
    probe_report(0, "socket: %s", strerror(errno));
    return probe_verdict();
  }
  struct timeval tv = {5, 0};
  setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)atoi(argv[2]));
  if (inet_pton(AF_INET, argv[1], &a.sin_addr) != 1) probe_usage("bad address");
  char what[128];
  snprintf(what, sizeof what, "connect %s:%s", argv[1], argv[2]);
  probe_attempt(what, connect(s, (struct sockaddr*)&a, sizeof a));
  close(s);
  return probe_verdict();
}
