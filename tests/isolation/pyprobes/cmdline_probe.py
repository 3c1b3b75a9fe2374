# SPDX-License-Identifier: BSD-3-Clause
# cmdline_probe: /proc/PID/cmdline is readable by every process that can see PID. In the jail, the
# processes we can see besides our own are the jail's init, a copy of cellgate-jail whose argv names
# host paths (status file, runtime dir, bind sources). None may show them; exit 77 = held.
import os
import sys

me = os.getpid()
seen = {}
for p in os.listdir("/proc"):
    if not p.isdigit() or int(p) == me:
        continue
    try:
        with open(f"/proc/{p}/cmdline", "rb") as f:
            seen[int(p)] = f.read()
    except OSError:
        pass
leaks = {pid: raw.split(b"\0")[:4] for pid, raw in seen.items() if b"/" in raw}
print("visible:", {pid: raw.split(b"\0")[0] for pid, raw in seen.items()})
print(f"ESCAPED: host argv visible {leaks}" if leaks else "held: no other process shows a path in its cmdline")
sys.exit(1 if leaks else 77)
