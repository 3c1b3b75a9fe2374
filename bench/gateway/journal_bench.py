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

SETTLE = 0.3  # s: past the journal writer's 100 ms batch


class Side:
    def __init__(self, label, binary, extra):
        self.label = label
        self.target = tm.CellgateTarget(binary, spawner="plain", extra_args=extra)
        self.target.start()
        kid = self.target.start_kernel()["id"]
        self.ws = jws.KernelWS(self.target.url, self.target.token, kid)
        self.ws.execute("1+1")  # warm
        self.lat, self.cpu, self.n = [], 0.0, 0

    def block(self, n):
        pid = self.target.proc.pid
        c0 = proc_cpu_seconds(pid)
        for _ in range(n):
            t0 = time.perf_counter()
            r = self.ws.execute("1+1")
            self.lat.append((time.perf_counter() - t0) * 1000)
            assert r.reply["content"]["status"] == "ok"
        time.sleep(SETTLE)
        self.cpu += proc_cpu_seconds(pid) - c0
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
    a = p.parse_args()
    if a.quick:
        a.blocks, a.per_block = 4, 25
    on = Side("cellgate", a.cellgate, [])
    off = Side("no-journal", a.cellgate, ["--journal", "off"])
    try:
        for i in range(a.blocks):
            for s in ((on, off) if i % 2 == 0 else (off, on)):
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
            print("%-12s %10s %10s %14s" % ("", "p50 ms", "p99 ms", "gw CPU ms/exec"))
            for label, p50, p99, cpu in rows:
                print("%-12s %10.3f %10.3f %14.4f" % (label, p50, p99, cpu))
            print("journal/off: p50 %.3fx, CPU %.3fx (%d executes each, interleaved in %d blocks); load %s"
                  % (rows[0][1] / rows[1][1], rows[0][3] / rows[1][3], on.n, a.blocks,
                     " ".join("%.2f" % x for x in os.getloadavg())))
    finally:
        on.stop()
        off.stop()


if __name__ == "__main__":
    main()
