// SPDX-License-Identifier: BSD-3-Clause
// ps_view: lists /proc; the host's sleeper process (argv `<dir>/sleeper MARKER`) or a host-sized
// process table is an escape. Prints what it sees, as `ps` would.
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include "probe.h"

int main(int argc, char** argv) {
  if (argc != 3) probe_usage("ps_view MARKER MAX_PROCESSES");
  int max = atoi(argv[2]);
  DIR* d = opendir("/proc");
  if (d == NULL) {
    probe_report(0, "opendir /proc: %s", strerror(errno));
    return probe_verdict();
  }
  int count = 0;
  int marker_seen = 0;
  for (struct dirent* e; (e = readdir(d)) != NULL;) {
    if (!isdigit((unsigned char)e->d_name[0])) continue;
    ++count;
    char path[300];
    snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = 0;
    // Match argv exactly: other cmdlines (ours, the jail init's copy of the helper's) hold the
    // marker as an argument too.
    const char* arg0 = buf;
    const char* arg1 = n > 0 ? buf + strlen(buf) + 1 : buf;
    const char* base = strrchr(arg0, '/');
    if (arg1 < buf + n && strcmp(base != NULL ? base + 1 : arg0, "sleeper") == 0 && strcmp(arg1, argv[1]) == 0) {
      marker_seen = 1;
    }
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] == 0) buf[i] = ' ';
    }
    printf("  pid %s: %s\n", e->d_name, buf);
  }
  closedir(d);
  probe_report(marker_seen, "host marker process %s", marker_seen ? "visible" : "not visible");
  probe_report(count > max, "%d processes visible (max %d for a jail)", count, max);
  return probe_verdict();
}
