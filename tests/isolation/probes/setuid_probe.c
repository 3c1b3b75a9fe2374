// SPDX-License-Identifier: BSD-3-Clause
// setuid_probe: runs the host's setuid-root programs that stop at a password prompt (su, passwd,
// chsh, chfn) with a silent stdin pipe, and reads their effective uid from /proc while they wait.
// Effective uid 0 (setuid honoured: no nosuid, no no_new_privs) is an escape; nothing is ever typed.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

static int euid_of(pid_t pid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", pid);
  FILE* f = fopen(path, "re");
  if (f == NULL) return -1;
  int euid = -1;
  while (fgets(line, sizeof line, f) != NULL) {
    int r, e;
    if (sscanf(line, "Uid:\t%d\t%d", &r, &e) == 2) euid = e;
  }
  fclose(f);
  return euid;
}

static void try_setuid(char* const argv[]) {
  struct stat st;
  if (stat(argv[0], &st) != 0 || !(st.st_mode & S_ISUID)) {
    probe_report(0, "%s: not a setuid program here", argv[0]);
    return;
  }
  int in[2];
  if (pipe(in) != 0) exit(PROBE_ERROR);
  pid_t c = fork();
  if (c == 0) {
    dup2(in[0], 0);
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    close(in[1]);
    execv(argv[0], argv);
    _exit(127);
  }
  close(in[0]);
  int worst = -1;
  int seen_exec = 0;
  for (int i = 0; i < 40 && waitpid(c, NULL, WNOHANG) == 0; ++i) {
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    int e = euid_of(c);
    if (e >= 0) {
      seen_exec = 1;
      if (worst < 0 || e == 0) worst = e;
    }
  }
  kill(c, SIGKILL);
  waitpid(c, NULL, 0);
  close(in[1]);
  if (!seen_exec) {
    probe_report(0, "%s: ended before its uid could be read", argv[0]);
  } else {
    probe_report(worst == 0, "%s: effective uid %d while waiting for a password", argv[0], worst);
  }
}

int main(void) {
  char* const su[] = {"/usr/bin/su", "-c", "true", "root", NULL};
  char* const passwd[] = {"/usr/bin/passwd", NULL};
  char* const chsh[] = {"/usr/bin/chsh", NULL};
  char* const chfn[] = {"/usr/bin/chfn", NULL};
  if (getuid() == 0) {
    // Bare on a host as root (the self-test): never poke the account tools as the real root.
    probe_report(1, "running as uid 0: no setuid program is needed to be root");
    return probe_verdict();
  }
  try_setuid(su);
  try_setuid(passwd);
  try_setuid(chsh);
  try_setuid(chfn);
  return probe_verdict();
}
