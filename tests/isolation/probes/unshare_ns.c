// SPDX-License-Identifier: BSD-3-Clause
// unshare_ns: tries to create one namespace type with unshare(2), clone(2) and clone3(2), each in a
// throwaway child so the probe itself stays where it was.

#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

static const struct {
  const char* name;
  unsigned long flag;
} kTypes[] = {
    {"user", CLONE_NEWUSER}, {"mnt", CLONE_NEWNS},     {"net", CLONE_NEWNET},   {"pid", CLONE_NEWPID},
    {"ipc", CLONE_NEWIPC},   {"uts", CLONE_NEWUTS},    {"cgroup", CLONE_NEWCGROUP}, {"time", CLONE_NEWTIME},
};

// Runs `unshare(flag)` in a child; its exit status carries the verdict back.
static void via_unshare(const char* name, unsigned long flag) {
  pid_t c = fork();
  if (c == 0) _exit(unshare((int)flag) == 0 ? 0 : errno);
  int st = 0;
  waitpid(c, &st, 0);
  int code = WIFEXITED(st) ? WEXITSTATUS(st) : 255;
  probe_report(code == 0, "unshare(CLONE_NEW%s): %s", name, code == 0 ? "allowed" : strerror(code));
}

static void via_clone(const char* name, unsigned long flag) {
  long c = syscall(SYS_clone, flag | SIGCHLD, 0, NULL, NULL, 0);
  if (c == 0) _exit(0);
  if (c > 0) waitpid((pid_t)c, NULL, 0);
  char what[64];
  snprintf(what, sizeof what, "clone(CLONE_NEW%s)", name);
  probe_attempt(what, c);
}

static void via_clone3(const char* name, unsigned long flag) {
  struct clone_args args;
  memset(&args, 0, sizeof args);
  args.flags = flag;
  args.exit_signal = SIGCHLD;
  long c = syscall(SYS_clone3, &args, sizeof args);
  if (c == 0) _exit(0);
  if (c > 0) waitpid((pid_t)c, NULL, 0);
  char what[64];
  snprintf(what, sizeof what, "clone3(CLONE_NEW%s)", name);
  probe_attempt(what, c);
}

int main(int argc, char** argv) {
  if (argc != 2) probe_usage("unshare_ns user|mnt|net|pid|ipc|uts|cgroup|time");
  for (size_t i = 0; i < sizeof kTypes / sizeof kTypes[0]; ++i) {
    if (strcmp(argv[1], kTypes[i].name) != 0) continue;
    // Every namespace type the kernel has shows in /proc/self/ns (time: Linux 5.6, CONFIG_TIME_NS).
    // Without it, unshare fails with EINVAL for everyone: no door here to hold.
    char ns_path[64];
    snprintf(ns_path, sizeof ns_path, "/proc/self/ns/%s", kTypes[i].name);
    if (access(ns_path, F_OK) != 0 && errno == ENOENT) {
      probe_unavailable("%s namespaces: not in this kernel (no %s)", kTypes[i].name, ns_path);
      return probe_verdict();
    }
    via_unshare(kTypes[i].name, kTypes[i].flag);
    // CLONE_NEWTIME (0x80) lies inside clone(2)'s exit-signal byte, so clone cannot ask for it;
    // clone3 rejects it too. unshare(2) is the only way into a new time namespace.
    if (kTypes[i].flag != CLONE_NEWTIME) {
      via_clone(kTypes[i].name, kTypes[i].flag);
      via_clone3(kTypes[i].name, kTypes[i].flag);
    }
    return probe_verdict();
  }
  probe_usage("unknown namespace type");
  return PROBE_ERROR;
}
