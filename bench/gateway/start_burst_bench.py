#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Start burst bench: a burst of POST /api/kernels, against two cellgate builds in one interleaved run.

Per round and build (the order flips each round, so that a drift of the shared machine hits both
alike), one jailed gateway with a warm pool of --burst kernels:
  alone      --alone claims one at a time, the pool refilled between them: POST -> kernel_info_reply
  pool burst --burst POSTs at once on the full pool: each one's POST -> kernel_info_reply
  fork burst --burst POSTs at once that bypass the pool (a variable the pool cannot take, so each is a
             fork-server start): each one's POST -> kernel_info_reply
and, during each burst, GET /api from one more client in a loop: how long the io thread kept the
others waiting. Figures are medians over the rounds of each round's p50/max; the last column is
A/B. A benchmark, not a test: nothing here asserts a speed.

  start_burst_bench.py --cellgate build/bin/cellgate --cellgate-b /tmp/old/cellgate --rounds 3
"""
import argparse
import concurrent.futures as cf
import os
import platform
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))
sys.path.insert(0, os.path.join(HERE, ".."))

import jupyter_ws as jws  # noqa: E402
import targets as tm  # noqa: E402
from run import machine_line  # noqa: E402

SPEC = "python3"


def to_kernel_info(t, body):
    t0 = time.perf_counter()
    r = t.post("api/kernels", json=body, timeout=300)
    if r.status_code != 201:
        return None, r.status_code, None
    kid = r.json()["id"]
    kws = jws.KernelWS(t.url, t.token, kid)
    try:
        kws.request("shell", "kernel_info_request", {}, timeout=120)
        return (time.perf_counter() - t0) * 1000, 201, kid
    finally:
        kws.close()


def pool_ready(t):
    return t.get("api/status").json().get("pool", {}).get(SPEC, {}).get("ready", 0)


def wait_pool(t, size, timeout=300):
    deadline = time.monotonic() + timeout
    while pool_ready(t) < size:
        if time.monotonic() > deadline:
            raise RuntimeError("pool did not refill:\n" + t.log_tail())
        time.sleep(0.1)
    time.sleep(1.0)  # the last refill's first second is behind us


def burst(t, n, body):
    """n POSTs at once, GET /api in a loop meanwhile: ([ms each], [statuses], [probe ms])."""
    go = threading.Barrier(n + 2)
    done = threading.Event()
    probes = []

    def probe():
        s = tm.TokenClient(t, "probe", t.token)
        s.api("GET", "api")
        go.wait()
        while not done.is_set():
            t0 = time.perf_counter()
            s.api("GET", "api", timeout=300)
            probes.append((time.perf_counter() - t0) * 1000)
            time.sleep(0.005)

    def one(_):
        go.wait()
        return to_kernel_info(t, body)

    prober = threading.Thread(target=probe)
    prober.start()
    with cf.ThreadPoolExecutor(n) as ex:
        futures = [ex.submit(one, i) for i in range(n)]
        go.wait()
        results = [f.result() for f in futures]
    done.set()
    prober.join()
    for _, _, kid in results:
        if kid:
            t.delete_kernel(kid)
    return [r[0] for r in results if r[0] is not None], [r[1] for r in results], probes


def one_round(binary, a):
    t = tm.CellgateTarget(binary, spawner="jail", extra_args=[
        "--pool", "%s=%d" % (SPEC, a.burst), "--pool-concurrency", "2", "--allow-env", "BENCH_COLD"])
    t.start()
    try:
        deadline = time.monotonic() + 120
        while not os.path.exists(os.path.join(t.run_dir, "zygote.sock")) and time.monotonic() < deadline:
            time.sleep(0.05)
        row = {}
        alone = []
        for _ in range(a.alone):
            wait_pool(t, a.burst)
            ms, status, kid = to_kernel_info(t, {"name": SPEC})
            t.delete_kernel(kid)
            alone.append(ms)
        row["alone p50"] = statistics.median(alone)
        wait_pool(t, a.burst)
        for label, body in (("pool burst", {"name": SPEC}),
                            ("fork burst", {"name": SPEC, "env": {"BENCH_COLD": "1"}})):
            each, statuses, probes = burst(t, a.burst, body)
            row[label + " p50"] = statistics.median(each) if each else None
            row[label + " max"] = max(each) if each else None
            row[label + " ok"] = sum(1 for s in statuses if s == 201)
            row[label + " GET /api p50"] = statistics.median(probes) if probes else None
            row[label + " GET /api max"] = max(probes) if probes else None
            if label == "pool burst":
                wait_pool(t, a.burst)
        return row
    finally:
        t.stop()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cellgate", default=os.environ.get("CELLGATE_BIN"), help="build A")
    p.add_argument("--cellgate-b", required=True, help="build B (e.g. main's)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--burst", type=int, default=20)
    p.add_argument("--alone", type=int, default=5)
    a = p.parse_args()
    if os.geteuid() != 0:
        print("the jailed bench needs root", file=sys.stderr)
        return 1
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    builds = [("A", a.cellgate), ("B", a.cellgate_b)]
    rows = {"A": [], "B": []}
    load0 = os.getloadavg()[0]
    for r in range(a.rounds):
        for name, binary in (builds if r % 2 == 0 else builds[::-1]):
            print("# round %d/%d: %s ..." % (r + 1, a.rounds, name), file=sys.stderr, flush=True)
            rows[name].append(one_round(binary, a))
    print("start burst bench: jailed ipykernels, warm pool %s=%d, %d rounds interleaved; load %.1f -> %.1f"
          % (SPEC, a.burst, a.rounds, load0, os.getloadavg()[0]))
    print("host: " + machine_line())
    print("A = %s\nB = %s" % (a.cellgate, a.cellgate_b))
    print("%-26s %10s %10s %8s" % ("ms (median of rounds)", "A", "B", "A/B"))
    for key in rows["A"][0]:
        med = {}
        for name in ("A", "B"):
            vals = [row[key] for row in rows[name] if row.get(key) is not None]
            med[name] = statistics.median(vals) if vals else None
        ratio = "%.2f" % (med["A"] / med["B"]) if med["A"] is not None and med["B"] else "-"
        f = (lambda v: "fail" if v is None else "%.1f" % v)
        print("%-26s %10s %10s %8s" % (key, f(med["A"]), f(med["B"]), ratio))
    print("rounds:")
    for name in ("A", "B"):
        for i, row in enumerate(rows[name]):
            print("  %s %d: %s" % (name, i + 1, ", ".join("%s %s" % (k, "-" if v is None else "%.0f" % v)
                                                       for k, v in row.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
