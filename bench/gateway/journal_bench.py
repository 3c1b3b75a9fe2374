#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# cellgate-bench: figures
# Journal benchmark: what the execution journal adds to a `1+1` execute (issue 24).
"""Two gateways of the same binary run side by side, one with the journal (the default) and one
with --journal off, each with one kernel; `1+1` round trips over the kernel WebSocket go to them in
interleaved blocks (A, B, A, B, ...), so that the machine's noise falls on both alike. Figures:

  journal exec 1+1 p50     execute_request sent -> execute_reply and iopub idle received (ms)
  journal gw CPU/exec      gateway CPU time (user+sys, all threads, the journal's writer included)
                           per round trip (ms); target: at most 5% over --journal off

With --baseline OLD, a second binary runs as two more gateways in the same rotation (an A/B of a change
in one run, on the same machine noise), and the text output splits each side's CPU into the io thread
(the process's main thread) and the others (the journal's writer, the offload pool).

A block's CPU is read SETTLE seconds after its last reply, on both sides alike: the journal writes in
batches every 100 ms, and the batch holding a block's last entries must count for that block.
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))
sys.path.insert(0, HERE)

import jupyter_ws as jws  # noqa: E402
import targets as tm  # noqa: E402
from gateway_bench import percentile, proc_cpu_seconds  # noqa: E402


def thread_cpu_seconds(pid, tid):
    try:
        with open("/proc/%d/task/%d/schedstat" % (pid, tid)) as f:
            return int(f.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0

SETTLE = 0.3  # s: past the journal writer's 100 ms batch


class Side:
    def __init__(self, label, binary, extra):
        self.label = label
        self.target = tm.CellgateTarget(binary, spawner="plain", extra_args=extra)
        self.target.start()
        kid = self.target.start_kernel()["id"]
        self.ws = jws.KernelWS(self.target.url, self.target.token, kid)
        self.ws.execute("1+1")  # warm
        self.lat, self.cpu, self.io_cpu, self.n = [], 0.0, 0.0, 0

    def block(self, n):
        pid = self.target.proc.pid
        c0, io0 = proc_cpu_seconds(pid), thread_cpu_seconds(pid, pid)
        for _ in range(n):
            t0 = time.perf_counter()
            r = self.ws.execute("1+1")
            self.lat.append((time.perf_counter() - t0) * 1000)
            assert r.reply["content"]["status"] == "ok"
        time.sleep(SETTLE)
        self.cpu += proc_cpu_seconds(pid) - c0
        self.io_cpu += thread_cpu_seconds(pid, pid) - io0
        self.n += n

    def stop(self):
        self.ws.close()
        self.target.stop()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cellgate", required=True)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--jsonl", action="store_true")
    p.add_argument("--blocks", type=int, default=20)
    p.add_argument("--per-block", type=int, default=100)
    p.add_argument("--baseline", help="another cellgate binary, run alongside as 'old' (A/B in one run)")
    a = p.parse_args()
    if a.quick:
        a.blocks, a.per_block = 4, 25
    on = Side("cellgate", a.cellgate, [])
    off = Side("no-journal", a.cellgate, ["--journal", "off"])
    sides = [on, off]
    if a.baseline:
        sides += [Side("old", a.baseline, []), Side("old-off", a.baseline, ["--journal", "off"])]
    try:
        for i in range(a.blocks):
            # Every side takes each place in the rotation equally often.
            k = i % len(sides)
            for s in sides[k:] + sides[:k]:
                s.block(a.per_block)
        rows = []
        for s in (on, off):
            p50 = statistics.median(s.lat)
            cpu = s.cpu / s.n * 1000
            rows.append((s.label, p50, percentile(s.lat, 99), cpu))
            if a.jsonl:
                target_lat = "<= no-journal+0.2" if s is on else None
                target_cpu = "<= 1.05x no-journal" if s is on else None
                print(json.dumps({"figure": "journal exec 1+1 p50", "backend": s.label, "value": round(p50, 3),
                                  "unit": "ms", "target": target_lat, "group": "journal"}))
                print(json.dumps({"figure": "journal gw CPU/exec", "backend": s.label, "value": round(cpu, 4),
                                  "unit": "ms", "target": target_cpu, "group": "journal"}))
        if not a.jsonl:
            print("%-12s %10s %10s %14s %10s %10s" % ("", "p50 ms", "p99 ms", "gw CPU ms/exec", "io thread", "others"))
            for s in sides:
                print("%-12s %10.3f %10.3f %14.4f %10.4f %10.4f"
                      % (s.label, statistics.median(s.lat), percentile(s.lat, 99), s.cpu / s.n * 1000,
                         s.io_cpu / s.n * 1000, (s.cpu - s.io_cpu) / s.n * 1000))
            for j, o in zip(sides[0::2], sides[1::2]):
                print("%s: journal/off: p50 %.3fx, CPU %.3fx (io thread +%.4f ms, others +%.4f ms per execute)"
                      % (j.label, statistics.median(j.lat) / statistics.median(o.lat), (j.cpu / j.n) / (o.cpu / o.n),
                         (j.io_cpu / j.n - o.io_cpu / o.n) * 1000,
                         ((j.cpu - j.io_cpu) / j.n - (o.cpu - o.io_cpu) / o.n) * 1000))
            print("%d executes per side, interleaved in %d blocks; load %s"
                  % (on.n, a.blocks, " ".join("%.2f" % x for x in os.getloadavg())))
    finally:
        for s in sides:
            s.stop()


if __name__ == "__main__":
    main()
