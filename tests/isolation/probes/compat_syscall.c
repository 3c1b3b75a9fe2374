// SPDX-License-Identifier: BSD-3-Clause
// compat_syscall: an x32 syscall and an i386 `int 0x80` syscall (ways around a filter written only
// for x86_64); each must kill the caller with SIGSYS (libseccomp's bad-arch action).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe.h"

static void x32_getpid(void) {
  long ret;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(0x40000000L | 39) : "rcx", "r11", "memory");
  _exit(ret > 0 ? 0 : 3);
}

static void i386_getpid(void) {
  long ret;
  __asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory");
  _exit(ret > 0 ? 0 : 3);
}

static void in_child(const char* what, void (*fn)(void)) {
  pid_t c = fork();
  if (c == 0) fn();
  int st = 0;
  waitpid(c, &st, 0);
  if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS) {
    probe_report(0, "%s: killed by SIGSYS", what);
  } else if (WIFSIGNALED(st)) {
    probe_report(1, "%s: killed by signal %d, not SIGSYS", what, WTERMSIG(st));
  } else {
    probe_report(1, "%s: returned (exit %d), not killed by SIGSYS", what, WEXITSTATUS(st));
  }
}

int main(void) {
  in_child("x32 getpid", x32_getpid);
  in_child("int 0x80 getpid", i386_getpid);
  return probe_verdict();
}
