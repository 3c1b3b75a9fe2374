// SPDX-License-Identifier: BSD-3-Clause
// outbound_net: an outbound connect must fail at once with ENETUNREACH (the jail has only `lo`, so
// nothing is ever sent: the effect judged is "a packet could leave"); also UDP, IPv6, and the
// interface list.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "probe.h"

static void expect_unreach(const char* what, int family, int type, const void* addr, socklen_t len) {
  int s = socket(family, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0) {
    probe_report(0, "%s: socket: %s", what, strerror(errno));
    return;
  }
  int rc = connect(s, addr, len);
  if (rc == 0 && type == SOCK_DGRAM) rc = (int)send(s, "x", 1, 0);
  int err = errno;
  close(s);
  probe_report(!(rc < 0 && err == ENETUNREACH), "%s: %s", what, rc < 0 ? strerror(err) : "connected/sent");
}

int main(void) {
  struct sockaddr_in v4;
  memset(&v4, 0, sizeof v4);
  v4.sin_family = AF_INET;
  // Documentation addresses only (TEST-NET-1, RFC 5737; 2001:db8::/32, RFC 3849): never routed, so a
  // bare run (the self-test), whose packets do leave, targets no one.
  inet_pton(AF_INET, "192.0.2.1", &v4.sin_addr);
  v4.sin_port = htons(80);
  expect_unreach("tcp 192.0.2.1:80", AF_INET, SOCK_STREAM, &v4, sizeof v4);
  v4.sin_port = htons(9);
  expect_unreach("udp 192.0.2.1:9", AF_INET, SOCK_DGRAM, &v4, sizeof v4);
  struct sockaddr_in6 v6;
  memset(&v6, 0, sizeof v6);
  v6.sin6_family = AF_INET6;
  inet_pton(AF_INET6, "2001:db8::1", &v6.sin6_addr);
  v6.sin6_port = htons(80);
  int s6 = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s6 < 0) {
    probe_report(0, "ipv6 socket: %s", strerror(errno));
  } else {
    close(s6);
    int rc = -1;
    int st = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (st >= 0) rc = connect(st, (struct sockaddr*)&v6, sizeof v6);
    int err = errno;
    if (st >= 0) close(st);
    // IPv6 may be disabled in the jail: EAFNOSUPPORT/EADDRNOTAVAIL also mean no route out.
    int held = rc < 0 && (err == ENETUNREACH || err == EAFNOSUPPORT || err == EADDRNOTAVAIL);
    probe_report(!held, "tcp [2001:db8::1]:80: %s", rc < 0 ? strerror(err) : "connecting");
  }
  FILE* f = fopen("/proc/net/dev", "re");
  if (f == NULL) {
    probe_report(0, "/proc/net/dev: %s", strerror(errno));
  } else {
    char line[512];
    int others = 0;
    for (int n = 0; fgets(line, sizeof line, f) != NULL; ++n) {
      if (n < 2) continue;
      char name[64];
      if (sscanf(line, " %63[^:]:", name) == 1 && strcmp(name, "lo") != 0) {
        printf("  interface %s\n", name);
        ++others;
      }
    }
    fclose(f);
    probe_report(others > 0, "%d interfaces besides lo", others);
  }
  return probe_verdict();
}
