# SPDX-License-Identifier: BSD-3-Clause
# sigterm_probe: SIGTERM to the helper reaches the kernel (graceful shutdown path): a handler runs,
# and the main loop cleans up and exits 0.
import signal
import sys
import time

from jailed import require_jail

got = []


def on_term(signum, frame):
    got.append(signum)  # only a flag: printing here could re-enter a print in progress


require_jail()
signal.signal(signal.SIGTERM, on_term)
print("ready", flush=True)
deadline = time.monotonic() + 120
while not got and time.monotonic() < deadline:
    time.sleep(0.05)
if not got:
    print("SIGTERM never came", flush=True)
    sys.exit(1)
print("got SIGTERM, shutting down cleanly", flush=True)
