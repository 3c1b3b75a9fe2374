// SPDX-License-Identifier: BSD-3-Clause
// cpu_spin: spins THREADS threads for SECONDS of wall time, then prints the CPU time it got as
// `cores=<cpu seconds / wall seconds>`. The test decides; this probe only measures.
#include <pthread.h>
#include <time.h>

#include "probe.h"

static double now(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double g_deadline;

static void* spin(void* arg) {
  (void)arg;
  volatile unsigned long x = 0;
  while (now(CLOCK_MONOTONIC) < g_deadline) ++x;
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 3) probe_usage("cpu_spin SECONDS THREADS");
  double secs = atof(argv[1]);
  int n = atoi(argv[2]);
  if (n < 1 || n > 16) probe_usage("THREADS 1..16");
  double start = now(CLOCK_MONOTONIC);
  double cpu0 = now(CLOCK_PROCESS_CPUTIME_ID);
  g_deadline = start + secs;
  pthread_t t[16];
  for (int i = 0; i < n; ++i) pthread_create(&t[i], NULL, spin, NULL);
  for (int i = 0; i < n; ++i) pthread_join(t[i], NULL);
  double wall = now(CLOCK_MONOTONIC) - start;
  double cpu = now(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
  printf("cores=%.3f cpu=%.3f wall=%.3f\n", cpu / wall, cpu, wall);
  return 0;
}
