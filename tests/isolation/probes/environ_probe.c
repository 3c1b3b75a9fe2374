// SPDX-License-Identifier: BSD-3-Clause
// environ_probe: looks for a host secret (name or value) in its environment, in /proc/self/environ
// and in every /proc/<pid>/environ it can read (the jail's init is code of the helper binary, so an
// un-scrubbed init would still carry the gateway's environment).
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include "probe.h"

extern char** environ;

static int contains(const char* buf, size_t n, const char* needle) {
  size_t k = strlen(needle);
  for (size_t i = 0; k > 0 && i + k <= n; ++i) {
    if (memcmp(buf + i, needle, k) == 0) return 1;
  }
  return 0;
}

static void check_file(const char* path, const char* name, const char* value) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    probe_report(0, "%s: %s", path, strerror(errno));
    return;
  }
  static char buf[1 << 20];
  ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  if (n < 0) {
    probe_report(0, "%s: %s", path, strerror(errno));
    return;
  }
  int seen = contains(buf, (size_t)n, name) || contains(buf, (size_t)n, value);
  probe_report(seen, "%s: secret %s", path, seen ? "present" : "absent");
}

int main(int argc, char** argv) {
  if (argc != 3) probe_usage("environ_probe SECRET_NAME SECRET_VALUE");
  int seen = 0;
  for (char** e = environ; *e != NULL; ++e) {
    printf("  env %s\n", *e);
    if (strstr(*e, argv[1]) != NULL || strstr(*e, argv[2]) != NULL) seen = 1;
  }
  probe_report(seen, "environ: secret %s", seen ? "present" : "absent");
  check_file("/proc/self/environ", argv[1], argv[2]);
  DIR* d = opendir("/proc");
  for (struct dirent* e; d != NULL && (e = readdir(d)) != NULL;) {
    if (!isdigit((unsigned char)e->d_name[0])) continue;
    char path[300];
    snprintf(path, sizeof path, "/proc/%s/environ", e->d_name);
    check_file(path, argv[1], argv[2]);
  }
  if (d != NULL) closedir(d);
  return probe_verdict();
}
