// SPDX-License-Identifier: BSD-3-Clause
// keyring_probe: tries the kernel keyring (add_key, keyctl, request_key): keyrings are not
// namespaced, so a jail must not touch them.
#include <linux/keyctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe.h"

int main(void) {
  long id = syscall(SYS_add_key, "user", "cellgate-probe", "secret", 6, KEY_SPEC_PROCESS_KEYRING);
  probe_attempt("add_key(user, process keyring)", id);
  probe_attempt("keyctl(GET_KEYRING_ID, session)",
                syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
  probe_attempt("keyctl(GET_KEYRING_ID, user)", syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0));
  long rk = syscall(SYS_request_key, "user", "cellgate-probe-absent", NULL, 0);
  // ENOKEY means the call reached the keyring code (the lookup ran); only a filter's EPERM/ENOSYS holds.
  if (rk < 0 && errno == ENOKEY) {
    probe_report(1, "request_key reached the keyring (ENOKEY)");
  } else {
    probe_attempt("request_key", rk);
  }
  return probe_verdict();
}
