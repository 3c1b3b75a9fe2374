#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# check_bench_table: runs xpython_bench.py --quick and checks that its table is well formed
# (header, rule, one row per kernel, 2 runs, positive numbers, min <= median <= max). No speed checks.
import re
import subprocess
import sys

bench, build = sys.argv[1], sys.argv[2]
out = subprocess.run([sys.executable, bench, "--build-dir", build, "--quick"], check=True,
                     capture_output=True, text=True, timeout=600).stdout
print(out, end="")
lines = [l for l in out.splitlines() if l.startswith("|")]
cells = [[c.strip() for c in l.strip("|").split("|")] for l in lines]
errors = []
if len(cells) != 4:
    errors.append(f"expected header + rule + 2 rows, got {len(cells)} table lines")
else:
    if cells[0] != ["kernel", "runs", "start_median_s", "start_min_s", "start_max_s", "rss_median_mib",
                    "pss_median_mib"]:
        errors.append(f"bad header {cells[0]}")
    if not all(re.fullmatch(r"-+", c) for c in cells[1]):
        errors.append("bad rule line")
    if sorted(r[0] for r in cells[2:]) != ["cellgate-xpython", "ipykernel"]:
        errors.append(f"bad kernel names {[r[0] for r in cells[2:]]}")
    for r in cells[2:]:
        if r[1] != "2":
            errors.append(f"{r[0]}: runs {r[1]} != 2")
        try:
            nums = [float(v) for v in r[2:]]
        except ValueError:
            errors.append(f"{r[0]}: non-numeric cell in {r}")
            continue
        if not all(v > 0 for v in nums):
            errors.append(f"{r[0]}: non-positive value in {r}")
        if not nums[1] <= nums[0] <= nums[2]:
            errors.append(f"{r[0]}: start min/median/max out of order in {r}")
        if nums[4] > nums[3] + 0.05:
            errors.append(f"{r[0]}: PSS above RSS in {r}")
for e in errors:
    print("check_bench_table:", e)
sys.exit(1 if errors else 0)
