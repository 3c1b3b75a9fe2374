#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# xpython_bench: start time and memory of cellgate-xpython vs ipykernel, bare, in one run.
#
# For each run and kernel (interleaved, so background load hits both alike): launch through
# jupyter_client, time launch -> first kernel_info_reply, run one tiny cell, then read the
# kernel process's RSS and PSS from /proc/<pid>/smaps_rollup, and shut it down.
# Prints one table row per kernel: medians (and min/max of the start time) over N runs.
# Usage: xpython_bench.py --build-dir BUILD [--runs N | --quick]   (Debian's /usr/bin/python3)
import argparse
import os
import statistics
import subprocess
import sys
import time

from jupyter_client.manager import KernelManager

TIMEOUT = 60  # seconds for any single start or request
KERNELS = [("xpython", "cellgate-xpython"), ("python3", "ipykernel")]
COLUMNS = ["kernel", "runs", "start_median_s", "start_min_s", "start_max_s", "rss_median_mib", "pss_median_mib"]


def smaps_rollup_kib(pid):
    """{'Rss': kB, 'Pss': kB} of one process (Linux >= 4.14)."""
    out = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[2] == "kB" and parts[0] in ("Rss:", "Pss:"):
                out[parts[0][:-1]] = int(parts[1])
    return out


def one_run(kernel_name):
    km = KernelManager(kernel_name=kernel_name)
    t0 = time.monotonic()
    km.start_kernel(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # banners, debugpy warnings
    kc = km.client()
    try:
        kc.start_channels()
        kc.wait_for_ready(timeout=TIMEOUT)  # sends kernel_info_request until a reply comes
        start = time.monotonic() - t0
        reply = kc.execute_interactive("x = 1", timeout=TIMEOUT, output_hook=lambda m: None)
        if reply["content"]["status"] != "ok":
            raise RuntimeError(f"{kernel_name}: execute failed: {reply['content']}")
        mem = smaps_rollup_kib(km.provisioner.process.pid)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)
    return start, mem["Rss"] / 1024.0, mem["Pss"] / 1024.0


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--build-dir", required=True, help="cellgate build dir (its share/jupyter has xpython)")
    ap.add_argument("--runs", type=int, default=6, help="runs per kernel (1..100)")
    ap.add_argument("--quick", action="store_true", help="2 runs per kernel")
    args = ap.parse_args()
    runs = 2 if args.quick else args.runs
    if not 1 <= runs <= 100:
        sys.exit("xpython_bench: --runs must be in 1..100")
    share = os.path.join(os.path.abspath(args.build_dir), "share", "jupyter")
    if not os.path.exists(os.path.join(share, "kernels", "xpython", "kernel.json")):
        sys.exit(f"xpython_bench: no xpython kernelspec under {share} (build cellgate-xpython first)")
    os.environ["JUPYTER_PATH"] = share

    samples = {name: [] for name, _ in KERNELS}
    for _ in range(runs):
        for name, _ in KERNELS:
            samples[name].append(one_run(name))

    print("xpython_bench: bare kernels via jupyter_client, tcp 127.0.0.1; start = launch -> kernel_info_reply;")
    print(f"memory = kernel process after one cell (/proc/<pid>/smaps_rollup); {runs} runs each")
    rows = []
    for name, label in KERNELS:
        starts = [s[0] for s in samples[name]]
        rows.append([label, str(runs), f"{statistics.median(starts):.3f}", f"{min(starts):.3f}",
                     f"{max(starts):.3f}", f"{statistics.median(s[1] for s in samples[name]):.1f}",
                     f"{statistics.median(s[2] for s in samples[name]):.1f}"])
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(COLUMNS)]
    print("| " + " | ".join(c.ljust(w) for c, w in zip(COLUMNS, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join(v.ljust(w) for v, w in zip(r, widths)) + " |")


if __name__ == "__main__":
    main()
