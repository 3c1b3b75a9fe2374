// SPDX-License-Identifier: BSD-3-Clause
// fork_bomb: forks sleeping children until fork fails (held: EAGAIN before CAP) or CAP is reached
// (escaped). With `hold`, it then waits with the bomb in place so the test can kill the jail. With
// `classic`, it becomes `while (1) fork();` in every process (only for a jail: never run it bare).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe.h"

int main(int argc, char** argv) {
  if (argc != 3) probe_usage("fork_bomb CAP exit|hold|classic");
  int cap = atoi(argv[1]);
  if (strcmp(argv[2], "classic") == 0) {
    // Refuse outside a pid namespace of our own: pid 2 (after the jail's init) or below 10.
    if (getpid() > 10) probe_usage("classic mode only inside a jail");
    printf("bombing\n");
    fflush(stdout);
    for (;;) (void)fork();
  }
  int hold = strcmp(argv[2], "hold") == 0;
  static pid_t kids[100000];
  if (cap <= 0 || cap > 100000) probe_usage("bad CAP");
  int n = 0;
  int err = 0;
  for (; n < cap; ++n) {
    pid_t c = fork();
    if (c < 0) {
      err = errno;
      break;
    }
    if (c == 0) {
      pause();
      _exit(0);
    }
    kids[n] = c;
  }
  probe_report(!(n < cap && err == EAGAIN), "fork stopped after %d children: %s", n,
               n < cap ? strerror(err) : "cap reached");
  if (hold) {
    printf("holding\n");
    fflush(stdout);
    for (;;) pause();
  }
  for (int i = 0; i < n; ++i) kill(kids[i], SIGKILL);
  for (int i = 0; i < n; ++i) waitpid(kids[i], NULL, 0);
  return probe_verdict();
}
