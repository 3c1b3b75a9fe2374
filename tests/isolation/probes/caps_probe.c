// SPDX-License-Identifier: BSD-3-Clause
// caps_probe: the kernel's credentials: no capabilities of any kind, no_new_privs, seccomp filter
// mode, uid/gid 1000 named `sandbox`, no supplementary groups beyond its own.
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include "probe.h"

static void expect_field(const char* status, const char* field, const char* want) {
  char key[64];
  snprintf(key, sizeof key, "\n%s:\t", field);
  const char* at = strstr(status, key);
  if (at == NULL) {
    probe_report(1, "%s missing from /proc/self/status", field);
    return;
  }
  at += strlen(key);
  size_t len = strcspn(at, "\n");
  int ok = strlen(want) == len && strncmp(at, want, len) == 0;
  probe_report(!ok, "%s = %.*s (want %s)", field, (int)len, at, want);
}

int main(void) {
  FILE* f = fopen("/proc/self/status", "re");
  if (f == NULL) return PROBE_ERROR;
  static char status[16384];
  status[0] = '\n';
  size_t n = fread(status + 1, 1, sizeof status - 2, f);
  status[n + 1] = 0;
  fclose(f);
  const char* zero = "0000000000000000";
  expect_field(status, "CapInh", zero);
  expect_field(status, "CapPrm", zero);
  expect_field(status, "CapEff", zero);
  expect_field(status, "CapBnd", zero);
  expect_field(status, "CapAmb", zero);
  expect_field(status, "NoNewPrivs", "1");
  expect_field(status, "Seccomp", "2");
  expect_field(status, "Uid", "1000\t1000\t1000\t1000");
  expect_field(status, "Gid", "1000\t1000\t1000\t1000");
  struct passwd* pw = getpwuid(getuid());
  int named = pw != NULL && strcmp(pw->pw_name, "sandbox") == 0;
  probe_report(!named, "user name %s (want sandbox)", pw != NULL ? pw->pw_name : "(none)");
  gid_t groups[64];
  int ng = getgroups(64, groups);
  int extra = 0;
  for (int i = 0; i < ng; ++i) extra |= groups[i] != getgid();
  probe_report(ng < 0 || extra, "%d supplementary groups, none foreign", ng);
  return probe_verdict();
}
