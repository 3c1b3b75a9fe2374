# SPDX-License-Identifier: BSD-3-Clause
# environ_probe: the Python view of the kernel's environment (os.environ, /proc/self/environ) must
# not carry the host secret; exit 77 = held.
import os
import sys

name, value = sys.argv[1], sys.argv[2]
leaks = [k for k, v in os.environ.items() if name in k or value in v]
with open("/proc/self/environ", "rb") as f:
    raw = f.read()
if name.encode() in raw or value.encode() in raw:
    leaks.append("/proc/self/environ")
print("environment:", sorted(os.environ))
print(("ESCAPED: secret in " + ", ".join(leaks)) if leaks else "held: secret absent from os.environ and /proc/self/environ")
sys.exit(1 if leaks else 77)
