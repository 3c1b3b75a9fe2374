#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# cellgate-bench: figures
# Cluster bench (docs/cluster.md §5, issue 25): a kernel reached through its own node and through another.
"""Three nodes sharing one PostgreSQL, each in a network namespace of its own on a bridge, started by
the cluster test's own fixture (tests/integration/test_cluster.py: Cluster); and one node alone, the
same way. Measured in one run, interleaved (each round alternates which path goes first, so that a
drift of the shared machine falls on both alike):

  ws 1+1 p50/p99   `1+1` on a kernel WebSocket (v1): execute_request -> execute_reply and iopub idle,
                   through the node that holds the kernel (direct) and through another node, which
                   relays the socket to it over mutual TLS (proxied). Goal: at most +0.3 ms.
  iopub MB/s       one cell printing --mb MB of stream text, received through each (median of the
                   rounds). Goal: proxied at least 0.9x direct.
  REST execute     POST /api/kernels/{id}/execute of `1+1`, to the kernel's node and forwarded by
                   another (p50, p99).
  starts/s         --starts concurrent POST /api/kernels (each in a workspace of its own) spread over
                   the three nodes as a load balancer would, against the same burst on one node alone:
                   starts / seconds until the last 201 (median of the rounds).

All the nodes run on this one machine: they share its cores, so three nodes cannot start kernels
faster than one here; the figure shows what placement and forwarding cost, not what three machines
give. Kernels are jailed, as the cluster test runs them. As root (namespaces, a bridge), like the
cluster test; loopback and its namespaces only.

  bench/cluster/cluster_bench.py --cellgate build/bin/cellgate            table
  bench/cluster/cluster_bench.py --cellgate build/bin/cellgate --jsonl    figure lines for bench/run.py
"""
import argparse
import concurrent.futures as cf
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))
sys.path.insert(0, os.path.join(HERE, "..", "gateway"))
sys.path.insert(0, os.path.join(HERE, ".."))

import requests  # noqa: E402

from gateway_bench import PRINT_CODE, MB, WsKernel, percentile  # noqa: E402
from run import loadavg, machine_line  # noqa: E402

USER = "alice"


def ws_block(node, token, kid, a, rtts, rates):
    """One kernel WebSocket through node: a.iterations `1+1` round trips, then one --mb cell."""
    kws = WsKernel(node.url, token, kid, a.timeout)
    try:
        for _ in range(3):  # warm-up: the relay's connection, the kernel's caches
            kws.run("1+1", deadline=time.monotonic() + a.timeout)
        for _ in range(a.iterations):
            t0 = time.perf_counter()
            kws.run("1+1", deadline=time.monotonic() + a.timeout)
            rtts.append((time.perf_counter() - t0) * 1e3)
        code = PRINT_CODE % (a.mb * 1024)
        t0 = time.perf_counter()
        got = kws.run(code, count_stream=True, deadline=time.monotonic() + a.timeout)
        dt = time.perf_counter() - t0
        if got != a.mb * MB:
            raise RuntimeError("iopub through %s: %d of %d bytes" % (node.name, got, a.mb * MB))
        rates.append(got / MB / dt)
    finally:
        kws.close()


def rest_block(session, node, kid, a, times):
    url = node.url + "api/kernels/%s/execute" % kid
    for i in range(a.rest + 2):
        t0 = time.perf_counter()
        r = session.post(url, json={"code": "1+1"}, timeout=a.timeout)
        took = (time.perf_counter() - t0) * 1e3
        if r.status_code != 200:
            raise RuntimeError("execute through %s: %d %s" % (node.name, r.status_code, r.text))
        if i >= 2:  # the first two: warm-up (a connection to the node, to the kernel's node)
            times.append(took)


def start_burst(cluster, nodes, n, tag, a):
    """n POST /api/kernels at once, round-robin over nodes: starts per second; then all deleted."""
    s = cluster.session(USER)
    s.mount("http://", requests.adapters.HTTPAdapter(pool_maxsize=n))

    def one(i):
        node = nodes[i % len(nodes)]
        r = s.post(node.url + "api/kernels", json={"workspace": "%s-%d" % (tag, i)}, timeout=a.timeout)
        if r.status_code != 201:
            raise RuntimeError("start through %s: %d %s" % (node.name, r.status_code, r.text))
        return r.json()["id"]

    with cf.ThreadPoolExecutor(n) as ex:
        t0 = time.perf_counter()
        ids = list(ex.map(one, range(n)))
        took = time.perf_counter() - t0
    for kid in ids:
        s.delete(nodes[0].url + "api/kernels/" + kid, timeout=a.timeout)
    return n / took


def measure(c3, c1, a):
    token = c3.tokens[USER]
    s = c3.session(USER)
    r = s.post(c3.nodes["a"].url + "api/kernels", json={"workspace": "bench"}, timeout=a.timeout)
    if r.status_code != 201:
        raise RuntimeError("cannot start the bench kernel: %d %s" % (r.status_code, r.text))
    kid = r.json()["id"]
    holder = c3.nodes[c3.node_of(kid)[0]]
    via = next(n for n in c3.nodes.values() if n is not holder)
    paths = [("direct", holder), ("cellgate", via)]
    rtts = {p: [] for p, _ in paths}
    rates = {p: [] for p, _ in paths}
    rest = {p: [] for p, _ in paths}
    starts = {"cellgate": [], "one_node": []}
    bursts = [("cellgate", c3, list(c3.nodes.values())), ("one_node", c1, list(c1.nodes.values()))]
    try:
        for rnd in range(a.rounds):
            order = paths if rnd % 2 == 0 else paths[::-1]
            print("# round %d/%d (load %s)" % (rnd + 1, a.rounds, loadavg()), file=sys.stderr, flush=True)
            for label, node in order:
                ws_block(node, token, kid, a, rtts[label], rates[label])
            for label, node in order:
                rest_block(s, node, kid, a, rest[label])
            for label, cluster, nodes in (bursts if rnd % 2 == 0 else bursts[::-1]):
                starts[label].append(start_burst(cluster, nodes, a.starts, "burst%d%s" % (rnd, label[0]), a))
    finally:
        s.delete(holder.url + "api/kernels/" + kid, timeout=a.timeout)
    rows = []  # (figure, backend, value, unit, target)
    for label, _ in paths:
        target = label == "cellgate"
        rows += [("ws 1+1 p50 (proxied)", label, percentile(rtts[label], 50), "ms", "<= direct+0.3" if target else None),
                 ("ws 1+1 p99 (proxied)", label, percentile(rtts[label], 99), "ms", None),
                 ("iopub %dMB cell (proxied)" % a.mb, label, statistics.median(rates[label]), "MB/s",
                  ">= 0.9x direct" if target else None),
                 ("REST execute p50 (forwarded)", label, percentile(rest[label], 50), "ms", None),
                 ("REST execute p99 (forwarded)", label, percentile(rest[label], 99), "ms", None)]
    for label in ("cellgate", "one_node"):
        rows.append(("kernel starts/s (%d at once; 3 nodes vs one)" % a.starts, label,
                     statistics.median(starts[label]), "1/s", None))
    return rows, holder.name, via.name


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cellgate", default=os.environ.get("CELLGATE_BIN"), help="cellgate binary")
    p.add_argument("--quick", action="store_true", help="small sizes: a smoke run (ctest bench.quick)")
    p.add_argument("--rounds", type=int, default=5, help="rounds, each path once per round")
    p.add_argument("--iterations", type=int, default=100, help="`1+1` round trips per path and round")
    p.add_argument("--rest", type=int, default=50, help="REST executes per path and round")
    p.add_argument("--mb", type=int, default=20, help="MB printed by the iopub cell")
    p.add_argument("--starts", type=int, default=9, help="kernels started at once per burst")
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--jsonl", action="store_true", help="JSON lines for bench/run.py, not a table")
    a = p.parse_args()
    if a.quick:
        a.rounds, a.iterations, a.rest, a.mb, a.starts = 1, 10, 5, 2, 3
    if not (a.cellgate and os.access(a.cellgate, os.X_OK)):
        print("cellgate binary missing: %r (--cellgate or CELLGATE_BIN)" % a.cellgate, file=sys.stderr)
        return 1
    if os.geteuid() != 0:
        print("the cluster bench makes network namespaces: run it as root", file=sys.stderr)
        return 1
    os.environ["CELLGATE_BIN"] = os.path.abspath(a.cellgate)
    os.environ["CELLGATE_TEST_SPAWNER"] = "jail"  # as the cluster test runs its nodes: jailed kernels
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    import test_cluster as tc  # the fixture reads the two variables above

    load_before = loadavg()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    c3 = c1 = None
    try:
        c3 = tc.Cluster()
        c1 = tc.Cluster(names=("a",))
        rows, holder, via = measure(c3, c1, a)
    finally:
        for c in (c1, c3):
            if c:
                c.remove()
    if a.jsonl:
        for figure, backend, value, unit, target in rows:
            print(json.dumps({"figure": figure, "backend": backend, "value": value, "unit": unit,
                              "target": target, "group": "cluster"}))
        return 0
    print("cluster bench, %s; %s; load average %s before, %s after" % (started, machine_line(), load_before,
                                                                      loadavg()))
    print("kernel on node %s; direct: through %s, proxied: through %s; jailed kernels; %d rounds interleaved, "
          "%d x 1+1, %d REST executes per path and round; starts: %d at once" %
          (holder, holder, via, a.rounds, a.iterations, a.rest, a.starts))
    by = {}
    for figure, backend, value, unit, target in rows:
        by.setdefault(figure, {})[backend] = (value, unit, target)
    print("%-40s %10s %10s %10s  %s" % ("figure", "direct/1", "proxied/3", "ratio", "goal"))
    for figure, vals in by.items():
        ref = vals.get("direct") or vals.get("one_node")
        got = vals["cellgate"]
        added = " (%+.3f ms)" % (got[0] - ref[0]) if got[1] == "ms" else ""
        print("%-40s %10.3f %10.3f %9.2fx  %s%s" % (figure + " " + got[1], ref[0], got[0], got[0] / ref[0],
                                                   got[2] or "", added))
    return 0


if __name__ == "__main__":
    sys.exit(main())
