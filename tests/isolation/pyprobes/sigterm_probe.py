# SPDX-License-Identifier: BSD-3-Clause
# sigterm_probe: SIGTERM to the helper reaches the kernel (graceful shutdown path): a handler runs,
# cleans up and exits 0.
import signal
import sys
import time

from jailed import require_jail


def on_term(signum, frame):
    print("got SIGTERM, shutting down cleanly", flush=True)
    sys.exit(0)


require_jail()
signal.signal(signal.SIGTERM, on_term)
print("ready", flush=True)
time.sleep(120)
print("SIGTERM never came", flush=True)
sys.exit(1)
