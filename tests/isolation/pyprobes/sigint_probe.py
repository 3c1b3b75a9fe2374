# SPDX-License-Identifier: BSD-3-Clause
# sigint_probe: a sleeping Python gets SIGINT (via the helper) as KeyboardInterrupt and lives on.
import sys
import time

from jailed import require_jail

require_jail()
try:
    print("ready", flush=True)  # inside the try: a SIGINT right after "ready" is still caught
    time.sleep(120)
    print("sleep was not interrupted", flush=True)
    sys.exit(1)
except KeyboardInterrupt:
    print("interrupted: KeyboardInterrupt", flush=True)
time.sleep(0.2)
print("still alive after the interrupt", flush=True)
