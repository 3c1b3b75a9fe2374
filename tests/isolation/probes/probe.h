// SPDX-License-Identifier: BSD-3-Clause
// probe: shared verdict plumbing for the escape probes (exit 77 = held, as nsjail's tests do).
#pragma once

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PROBE_HELD = 77, PROBE_ESCAPED = 1, PROBE_ERROR = 2 };

static int probe_escaped_count __attribute__((unused)) = 0;

// One line per attempt so a failing ctest log says exactly which door was open.
static inline void probe_report(int escaped, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void probe_report(int escaped, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("%s: ", escaped ? "ESCAPED" : "held");
  vprintf(fmt, ap);
  printf("\n");
  fflush(stdout);
  va_end(ap);
  if (escaped) ++probe_escaped_count;
}

// A door this host does not have at all (the kernel lacks the feature, or a sysctl shuts it for
// everyone): held, and the line says why. The harness skips a bare run (the self-test) whose only
// outcomes are such lines: with no door open on the host, nothing proves the probe can see one, and
// a pass would be vacuous.
static inline void probe_unavailable(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void probe_unavailable(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("unavailable: ");
  vprintf(fmt, ap);
  printf("\n");
  fflush(stdout);
  va_end(ap);
}

// The first integer in a /proc or /sys file (a sysctl); -1 when the file is absent or unreadable.
static inline long probe_read_long(const char* path) {
  FILE* f = fopen(path, "re");
  if (f == NULL) return -1;
  long v = -1;
  if (fscanf(f, "%ld", &v) != 1) v = -1;
  fclose(f);
  return v;
}

// The Seccomp: field of /proc/self/status: 0 none, 1 strict, 2 filter; -1 when unknown.
static inline int probe_seccomp_mode(void) {
  FILE* f = fopen("/proc/self/status", "re");
  if (f == NULL) return -1;
  char line[256];
  int mode = -1;
  while (fgets(line, sizeof line, f) != NULL) {
    if (sscanf(line, "Seccomp: %d", &mode) == 1) break;
  }
  fclose(f);
  return mode;
}

// ENOSYS with no seccomp filter on this process can only come from the kernel: the syscall is not
// built in (CONFIG_BPF_SYSCALL=n, CONFIG_KEYS=n, ...). Under a filter it may be the filter's answer.
static inline int probe_not_in_kernel(int err) {
  return err == ENOSYS && probe_seccomp_mode() == 0;
}

// For calls that return -1/errno on failure: failure means the door held.
static inline void probe_attempt(const char* what, long rc) {
  int err = errno;
  if (rc >= 0) {
    probe_report(1, "%s succeeded (rc=%ld)", what, rc);
  } else if (probe_not_in_kernel(err)) {
    probe_unavailable("%s: ENOSYS with no seccomp filter: this kernel does not have it", what);
  } else {
    probe_report(0, "%s: %s", what, strerror(err));
  }
}

static inline int probe_verdict(void) {
  return probe_escaped_count > 0 ? PROBE_ESCAPED : PROBE_HELD;
}

static inline void probe_usage(const char* msg) {
  fprintf(stderr, "probe usage: %s\n", msg);
  exit(PROBE_ERROR);
}

#include <sched.h>
#include <sys/mount.h>

// Probes that try destructive mount operations (umount of /, pivot_root) first move into a private
// mount namespace when they can: jailed, that unshare is itself an escape and is reported; run bare
// on a host (to prove the probe can fail), it keeps the host's mount table untouched.
static inline void probe_private_mounts(void) {
  if (unshare(CLONE_NEWNS) == 0) {
    probe_report(1, "unshare(CLONE_NEWNS) allowed; continuing in a private mount namespace");
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
      fprintf(stderr, "cannot make mounts private: %s\n", strerror(errno));
      exit(PROBE_ERROR);
    }
  } else {
    probe_report(0, "unshare(CLONE_NEWNS): %s", strerror(errno));
  }
}
