# SPDX-License-Identifier: BSD-3-Clause
# zombie_probe: orphans a short-lived grandchild; the jail's init must reap it (no zombie stays).
import os
import subprocess
import sys
import time

from jailed import require_jail

require_jail()
for _ in range(5):
    subprocess.run("sleep 0.1 & exit 0", shell=True, check=True)
time.sleep(1.5)
zombies = []
for _ in range(50):
    zombies = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] == "Z":
            zombies.append(p)
    if not zombies:
        break
    time.sleep(0.2)
with open("/proc/1/comm") as f:
    print("pid 1 is", f.read().strip(), "; I am pid", os.getpid())
print("zombies:", zombies, flush=True)
sys.exit(1 if zombies else 0)
