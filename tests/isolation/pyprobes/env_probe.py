# SPDX-License-Identifier: BSD-3-Clause
# env_probe: the kernel's environment is exactly the --env entries plus the documented defaults
# (callers' values win); nothing else. argv: the allowed default names, then `--`, then K=V pairs
# that must be present. Exit 77 when it matches.
import os
import sys

sep = sys.argv.index("--")
allowed = set(sys.argv[1:sep])
wanted = dict(kv.split("=", 1) for kv in sys.argv[sep + 1:])
allowed |= set(wanted)
extra = sorted(set(os.environ) - allowed)
wrong = {k: os.environ.get(k) for k, v in wanted.items() if os.environ.get(k) != v}
print("environment:", {k: os.environ[k] for k in sorted(os.environ)})
if extra:
    print("ESCAPED: inherited or unexpected variables:", extra)
if wrong:
    print("ESCAPED: values not as given:", wrong)
if not extra and not wrong:
    print("held: environment is exactly the defaults plus --env")
sys.exit(1 if extra or wrong else 77)
