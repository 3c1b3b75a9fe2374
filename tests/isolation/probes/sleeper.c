// SPDX-License-Identifier: BSD-3-Clause
// sleeper: a host-side target process (its argv carries a marker the probes look for).
#include <unistd.h>

int main(int argc, char** argv) {
  (void)argc;
  (void)argv;
  for (;;) pause();
}
