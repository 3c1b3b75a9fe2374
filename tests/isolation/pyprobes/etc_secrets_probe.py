# SPDX-License-Identifier: BSD-3-Clause
# etc_secrets_probe: none of the host's secret paths (given as arguments) may exist in the jail, not
# even as an empty mount point or an unreadable dir, and no mount may come from one; while the /etc
# entries that /usr links to (given after --) are there, so the /usr the jail shows is whole.
# Usage: etc_secrets_probe.py SECRET... -- LINKED...   exit 77 = held.
import os
import sys

args = sys.argv[1:]
split = args.index("--")
secrets, linked = args[:split], args[split + 1:]
escaped = False
for path in secrets:
    if os.path.lexists(path):
        print(f"ESCAPED: {path} exists in the jail", flush=True)
        escaped = True
with open("/proc/self/mountinfo") as f:
    for line in f:
        root = line.split()[3]  # the source path within its file system (proc(5))
        if any(root == s or root.startswith(s + "/") for s in secrets):
            print(f"ESCAPED: a mount of {root}: {line.strip()}", flush=True)
            escaped = True
if not escaped:
    print(f"held: none of {len(secrets)} secret paths exists", flush=True)
# Completeness (a functional check): a bare run has them too, so this cannot make a bare run pass.
missing = [p for p in linked if not os.path.exists(p)]
if missing:
    print(f"FAILED: /usr links into /etc dangle: {missing}", flush=True)
sys.exit(1 if escaped or missing else 77)
