#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# cellgate-bench: figures
"""Warm pool bench: time from POST /api/kernels to kernel_info_reply, pooled claim vs cold start.

Both runs use the same jailed cellgate (--spawner jail): one without a pool (every POST starts a
kernel cold), one with --pool python3=N (every POST claims a warm kernel: workspace mounted into its
jail, limits, env and cwd applied). Between claims the bench waits for the pool to refill, so each
claim finds a ready kernel. Prints p50/p90 per path and the cold/pool ratio. Then a burst (issue 26):
--burst N POSTs at once, on a gateway whose pool holds N (all ready) and on one without a pool (each
POST a fork-server start): the time until the last kernel_info_reply, and the burst's per-claim p50
(claim speed: a burst of the pool's size must not wait for starts). A benchmark, not a test:
--quick --validate (ctest) only checks that every figure was produced.

With --jsonl it prints figure lines for bench/run.py (group "warm pool"): the pool claim is backend
"cellgate" (target <= 20 ms p50, issue #8), the cold start of the same gateway is the reference
backend "cold_start", so the table shows the claim's ratio to a cold start.
"""
import argparse
import concurrent.futures as cf
import json
import os
import statistics
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))

import jupyter_ws as jws  # noqa: E402
import targets as tm  # noqa: E402

SPEC = "python3"


def to_kernel_info(t):
    """Seconds from POST /api/kernels to its 201, and to the kernel_info_reply on a new WebSocket; the id."""
    t0 = time.perf_counter()
    r = t.post("api/kernels", json={"name": SPEC})
    r.raise_for_status()
    post = time.perf_counter() - t0
    kid = r.json()["id"]
    kws = jws.KernelWS(t.url, t.token, kid)
    try:
        kws.request("shell", "kernel_info_request", {}, timeout=60)
        took = time.perf_counter() - t0
    finally:
        kws.close()
    return post, took, kid


def pool_ready(t):
    return t.get("api/status").json().get("pool", {}).get(SPEC, {}).get("ready", 0)


def wait_pool(t, size, timeout):
    deadline = time.monotonic() + timeout
    while pool_ready(t) < size:
        if time.monotonic() > deadline:
            raise RuntimeError("pool did not refill:\n" + t.log_tail())
        time.sleep(0.1)
    time.sleep(0.5)  # let the refilled kernel settle: measure the claim, not a start beside it


def gateway(binary, pool_size, fork_server):
    """A started jailed gateway whose fork server (unless off) already serves: before it has preloaded,
    the gateway starts kernels cold, which a figure of the other path must not mix in."""
    extra = ["--pool", "%s=%d" % (SPEC, pool_size)] if pool_size else []
    if fork_server != "default":
        extra += ["--fork-server", fork_server]
    t = tm.CellgateTarget(binary, spawner="jail", extra_args=extra)
    t.start()
    if fork_server != "off":
        deadline = time.monotonic() + 60
        while not os.path.exists(os.path.join(t.run_dir, "zygote.sock")) and time.monotonic() < deadline:
            time.sleep(0.05)
    return t


def run(binary, n, pool_size, timeout, fork_server):
    t = gateway(binary, pool_size, fork_server)
    times, posts = [], []
    try:
        for _ in range(n):
            if pool_size:
                wait_pool(t, pool_size, timeout)
            post, took, kid = to_kernel_info(t)
            posts.append(post * 1000)
            times.append(took * 1000)
            t.delete_kernel(kid)
    finally:
        t.stop()
    return posts, times


def burst(binary, n, pooled, timeout, fork_server):
    """n POSTs at once (a pool of n, all ready, or no pool): (ms until the last kernel_info_reply, the
    per-request p50 in ms)."""
    t = gateway(binary, n if pooled else 0, fork_server)
    try:
        if pooled:
            wait_pool(t, n, timeout)
        gate = threading.Barrier(n + 1)

        def one(_):
            gate.wait()
            _, took, kid = to_kernel_info(t)
            return time.perf_counter(), took, kid
        with cf.ThreadPoolExecutor(n) as ex:
            futures = [ex.submit(one, i) for i in range(n)]
            gate.wait()  # every thread is at the gate: the POSTs leave together
            t0 = time.perf_counter()
            done = [f.result() for f in futures]
        for d in done:
            t.delete_kernel(d[2])
        return (max(d[0] for d in done) - t0) * 1000, statistics.median(d[1] * 1000 for d in done)
    finally:
        t.stop()


def summary(ms):
    if not ms:
        return None
    s = sorted(ms)
    return statistics.median(s), s[min(len(s) - 1, int(round(0.9 * (len(s) - 1))))], len(s)


def print_jsonl(rows, n_burst):
    """Figure lines: the pool claim is cellgate's, the cold start the reference it is compared to."""
    for label, backend in (("pool claim", "cellgate"), ("cold start", "cold_start")):
        b = rows.get(label + " burst")
        if n_burst:
            print(json.dumps({"figure": "burst of %d POSTs, all ready" % n_burst, "backend": backend,
                              "value": b[0] if b else None, "unit": "ms",
                              "target": "<= 0.15x cold_start" if backend == "cellgate" else None, "group": "warm pool"}))
            print(json.dumps({"figure": "burst of %d POSTs, p50 of each" % n_burst, "backend": backend,
                              "value": b[1] if b else None, "unit": "ms", "target": None, "group": "warm pool"}))
        for path, what in (("", "kernel_info_reply"), (", 201", "201")):
            for suffix, i, target in ((" p50", 0, "<= 20"), (" p90", 1, None)):
                v = rows.get(label + path)
                print(json.dumps({"figure": "pool claim -> %s%s" % (what, suffix), "backend": backend,
                                  "value": v[i] if v else None, "unit": "ms",
                                  "target": target if backend == "cellgate" and not path else None,
                                  "group": "warm pool"}))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cellgate", default=os.environ.get("CELLGATE_BIN"))
    p.add_argument("--claims", type=int, default=20)
    p.add_argument("--pool-size", type=int, default=2)
    p.add_argument("--burst", type=int, default=8,
                   help="POSTs at once against a pool of that size and without a pool (0: no burst)")
    p.add_argument("--quick", action="store_true", help="3 claims each, a burst of 2: a smoke run (ctest)")
    p.add_argument("--validate", action="store_true", help="exit 1 unless every figure was produced")
    p.add_argument("--timeout", type=float, default=120)
    p.add_argument("--fork-server", default="default", choices=("on", "off", "default"),
                   help="--fork-server for both gateways (default: the gateway's default)")
    p.add_argument("--jsonl", action="store_true", help="JSON lines for bench/run.py, not a table")
    a = p.parse_args()
    if a.quick:
        a.claims, a.burst = 3, min(a.burst, 2)
    if not (a.cellgate and os.access(a.cellgate, os.X_OK)):
        print("cellgate binary missing: %r" % a.cellgate, file=sys.stderr)
        return 1
    if os.geteuid() != 0:
        print("the jailed bench needs root", file=sys.stderr)
        return 1
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    rows = {}
    for label, size in (("cold start", 0), ("pool claim", a.pool_size)):
        print("# %s ..." % label, file=sys.stderr, flush=True)
        try:
            posts, times = run(a.cellgate, a.claims, size, a.timeout, a.fork_server)
            rows[label + ", 201"] = summary(posts)
            rows[label] = summary(times)
        except Exception as e:  # a failed run is a row of "fail", not a crash: the table says what ran
            print("# %s failed: %s" % (label, e), file=sys.stderr)
            rows[label + ", 201"] = rows[label] = None
    for label, pooled in (("cold start", False), ("pool claim", True)):
        if a.burst <= 0:
            break
        print("# %s burst of %d ..." % (label, a.burst), file=sys.stderr, flush=True)
        try:
            rows[label + " burst"] = burst(a.cellgate, a.burst, pooled, a.timeout, a.fork_server)
        except Exception as e:
            print("# %s burst failed: %s" % (label, e), file=sys.stderr)
            rows[label + " burst"] = None
    complete = all(v and (k.endswith(" burst") or v[2] == a.claims) for k, v in rows.items())
    if a.jsonl:
        print_jsonl(rows, a.burst)
        return 0 if complete else 1
    print("pool bench: POST /api/kernels -> its 201, and -> kernel_info_reply on a new WebSocket; jailed "
          "ipykernel, %d each, pool %s=%d; load %.1f" % (a.claims, SPEC, a.pool_size, os.getloadavg()[0]))
    print("%-17s %10s %10s %4s" % ("path", "p50 ms", "p90 ms", "n"))
    for label, v in rows.items():
        if label.endswith(" burst"):
            continue
        print("%-17s %10s %10s %4s" % ((label,) + (("%.1f" % v[0], "%.1f" % v[1], v[2]) if v else ("fail",) * 3)))
    for label in ("cold start", "pool claim"):
        v = rows.get(label + " burst")
        if a.burst > 0:
            print("%s: burst of %d POSTs, all ready %s ms, p50 of each %s ms" % (
                label, a.burst, "%.1f" % v[0] if v else "fail", "%.1f" % v[1] if v else "fail"))
    cold, pool = rows.get("cold start"), rows.get("pool claim")
    print("cold/pool p50: %s" % ("%.1fx" % (cold[0] / pool[0]) if cold and pool and pool[0] else "-"))
    if a.validate and not complete:
        print("incomplete table", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
