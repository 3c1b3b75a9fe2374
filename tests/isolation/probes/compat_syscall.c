// SPDX-License-Identifier: BSD-3-Clause
// compat_syscall: the two 32-bit doors around a filter written for x86_64 only: i386 syscalls through
// `int 0x80`, and x32 syscalls (`syscall` with bit 30 set in the number). usage: compat_syscall i386|x32
//
// The verdict is the effect, never the signal: a child asks the door for a `write` of a marker into a
// pipe the probe reads, and for `getpid`, compared with its real pid. Only a marker that arrived or a
// right pid is an escape. How the try ended (SIGSYS, SIGSEGV, an errno) only explains why it held:
// hosts differ (PVM guests run without IA-32 emulation, most kernels without x32), and a door the
// host does not have is reported as `unavailable:`, held, with the reason.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe.h"

struct Door {
  const char* key;
  const char* name;
  const char* abi;
  long nr_write, nr_getpid;
  long (*call)(long nr, long a, long b, long c);
};

// int 0x80 truncates every argument to 32 bits (arch/x86/entry: the i386 entry reads ebx, ecx, edx),
// so the buffer lives below 4 GiB (MAP_32BIT); the return value is an i386 int.
static long i386_call(long nr, long a, long b, long c) {
  long ret;
  __asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b), "d"(c) : "r8", "r9", "r10", "r11", "memory");
  return (long)(int)ret;
}

// x32: the 64-bit entry with __X32_SYSCALL_BIT (0x40000000) in the number, x86_64 argument registers.
static long x32_call(long nr, long a, long b, long c) {
  long ret;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return ret;
}

static const struct Door kDoors[] = {
    {"i386", "i386 int 0x80", "IA-32", 4, 20, i386_call},  // arch/x86/entry/syscalls/syscall_32.tbl
    {"x32", "x32 syscall", "x32", 0x40000000L | 1, 0x40000000L | 39, x32_call},  // syscall_64.tbl, x32 bit
};

// What the child saw; it lives in a shared page, so it survives the child's death.
struct Outcome {
  long write_ret, getpid_ret;
  int returned;
};

static void try_door(const struct Door* d) {
  static const char kMarker[] = "cellgate-compat-marker";
  char* low = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
  struct Outcome* out = mmap(NULL, sizeof *out, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  int p[2];
  if (low == MAP_FAILED || out == MAP_FAILED || pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) {
    fprintf(stderr, "setup: %s\n", strerror(errno));
    exit(PROBE_ERROR);
  }
  memcpy(low, kMarker, sizeof kMarker - 1);
  out->write_ret = out->getpid_ret = 1;  // neither a pid of ours (>1 unless pid 1) nor -errno
  out->returned = 0;
  fflush(stdout);
  pid_t c = fork();
  if (c < 0) exit(PROBE_ERROR);
  if (c == 0) {
    out->write_ret = d->call(d->nr_write, p[1], (long)low, (long)(sizeof kMarker - 1));
    out->getpid_ret = d->call(d->nr_getpid, 0, 0, 0);
    out->returned = 1;
    _exit(0);
  }
  close(p[1]);
  int st = 0;
  while (waitpid(c, &st, 0) < 0 && errno == EINTR) {
  }
  char got[64] = {0};
  ssize_t n = read(p[0], got, sizeof got - 1);
  close(p[0]);
  int wrote = n == (ssize_t)(sizeof kMarker - 1) && memcmp(got, kMarker, (size_t)n) == 0;
  int pid_right = out->getpid_ret == c;
  if (wrote || pid_right) {
    probe_report(1, "%s: the %s ABI answered: write %s (returned %ld), getpid %s (returned %ld, real pid %d)",
                 d->name, d->abi, wrote ? "put the marker into the pipe" : "had no effect", out->write_ret,
                 pid_right ? "gave the real pid" : "was wrong", out->getpid_ret, c);
  } else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV) {
    // No filter can do this (seccomp kills with SIGSYS): the kernel has no such entry, e.g. no IDT
    // gate for int 0x80 when IA-32 emulation is off (ia32_emulation=0, or a PVM guest).
    probe_unavailable("%s: %s ABI not available on this host (the call faulted with SIGSEGV; no write, no pid)",
                      d->name, d->abi);
  } else if (WIFSIGNALED(st)) {
    probe_report(0, "%s: killed by SIG%s before any effect%s", d->name, sigabbrev_np(WTERMSIG(st)),
                 WTERMSIG(st) == SIGSYS ? " (a seccomp filter's bad-arch action)" : "");
  } else if (out->returned && out->write_ret == -ENOSYS && out->getpid_ret == -ENOSYS && probe_not_in_kernel(ENOSYS)) {
    // Without any filter, ENOSYS comes from the kernel itself (e.g. CONFIG_X86_X32_ABI off, or
    // Debian's syscall.x32=n): the door does not exist here.
    probe_unavailable("%s: %s ABI not available on this host (ENOSYS with no seccomp filter; no write, no pid)",
                      d->name, d->abi);
  } else if (out->returned) {
    probe_report(0, "%s: refused, no effect: write %s, getpid %s%s", d->name,
                 out->write_ret < 0 ? strerror((int)-out->write_ret) : "returned",
                 out->getpid_ret < 0 ? strerror((int)-out->getpid_ret) : "returned a wrong pid",
                 out->write_ret == -ENOSYS ? " (the filter's ENOSYS, or no such ABI on this host)" : "");
  } else {
    probe_report(0, "%s: ended (status 0x%x) before any effect", d->name, st);
  }
  munmap(low, 4096);
  munmap(out, sizeof *out);
}

int main(int argc, char** argv) {
  if (argc != 2) probe_usage("compat_syscall i386|x32");
  for (size_t i = 0; i < sizeof kDoors / sizeof kDoors[0]; ++i) {
    if (strcmp(argv[1], kDoors[i].key) == 0) {
      try_door(&kDoors[i]);
      return probe_verdict();
    }
  }
  probe_usage("compat_syscall i386|x32");
  return PROBE_ERROR;
}
