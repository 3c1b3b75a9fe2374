// SPDX-License-Identifier: BSD-3-Clause
// nested_userns: runs util-linux `unshare -Ur` (and -Urn, -Urm + mount) as a user would from a shell.
#include <sys/wait.h>
#include <unistd.h>

#include "probe.h"

static void run(const char* what, char* const argv[]) {
  pid_t c = fork();
  if (c == 0) {
    execv(argv[0], argv);
    _exit(127);
  }
  int st = 0;
  waitpid(c, &st, 0);
  int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
  probe_report(ok, "%s: %s (status 0x%x)", what, ok ? "succeeded" : "failed", st);
}

int main(void) {
  char* const ur[] = {"/usr/bin/unshare", "-Ur", "/usr/bin/true", NULL};
  char* const urn[] = {"/usr/bin/unshare", "-Urn", "/usr/bin/true", NULL};
  char* const urm[] = {"/usr/bin/unshare", "-Urm", "/usr/bin/mount", "-t", "tmpfs", "none", "/tmp", NULL};
  run("unshare -Ur true", ur);
  run("unshare -Urn true", urn);
  run("unshare -Urm mount -t tmpfs none /tmp", urm);
  return probe_verdict();
}
