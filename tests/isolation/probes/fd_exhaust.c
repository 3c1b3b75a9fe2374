// SPDX-License-Identifier: BSD-3-Clause
// fd_exhaust: raises its soft RLIMIT_NOFILE to the hard one, tries to raise the hard one, then opens
// /dev/null until EMFILE. Held = EMFILE with every fd below LIMIT.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "probe.h"

int main(int argc, char** argv) {
  if (argc != 2) probe_usage("fd_exhaust LIMIT");
  long limit = atol(argv[1]);
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  printf("  RLIMIT_NOFILE soft %llu hard %llu\n", (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max);
  struct rlimit more = {rl.rlim_max + 4096, rl.rlim_max + 4096};
  probe_attempt("raise hard RLIMIT_NOFILE", setrlimit(RLIMIT_NOFILE, &more));
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  int highest = -1;
  int err = 0;
  for (long i = 0; i < limit * 4 + 64; ++i) {
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      err = errno;
      break;
    }
    highest = fd;
  }
  int held = err == EMFILE && highest < limit;
  probe_report(!held, "opened up to fd %d: %s (limit %ld)", highest, err ? strerror(err) : "cap reached", limit);
  return probe_verdict();
}
