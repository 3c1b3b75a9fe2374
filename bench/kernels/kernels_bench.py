#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# cellgate-bench: figures
# Other languages' kernels: cold jailed start and PSS per idle kernel of R and Octave, beside ipykernel's.
"""Against one `cellgate serve --spawner jail --fork-server off` (every kernel a cold jail, so ipykernel
is measured the way R and Octave always start), in one run:

  cold start   POST /api/kernels until its 201 (the kernel answered kernel_info in a new jail), then
               the first execute's result (`1+1`, `1+1`, `1+1`) over the kernel's WebSocket.
               --rounds rounds, the kernelspecs interleaved within each round (ipykernel, R,
               Octave, ipykernel, ...) so load drifts hit all of them alike; median per kernel.
  idle PSS     --idle kernels of each kind, started one after the other and left idle --settle
               seconds after one execute each; the PSS (/proc/PID/smaps_rollup) of every process of
               their jails (helper, init, kernel and its children: octave-cli for Octave), per kernel.

Each figure is reported for R and Octave as backend "cellgate", with ipykernel's value of the same run
as backend "ipykernel" (so the table shows the ratio); no targets. A kernelspec that is not installed
is skipped (its figures are left out). --jsonl prints one JSON line per figure for bench/run.py.
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "gateway"))
sys.path.insert(0, os.path.join(HERE, "..", "density"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))

import requests  # noqa: E402

import density_bench as db  # noqa: E402
import gateway_bench as gb  # noqa: E402
import targets as tm  # noqa: E402

KERNELS = {"python3": "ipykernel", "ir": "R", "octave": "Octave"}


def start(target, name, timeout):
    t0 = time.perf_counter()
    r = requests.post(target.url + "api/kernels", json={"name": name}, timeout=timeout,
                      headers={"Authorization": "token " + target.token})
    if r.status_code != 201:
        raise gb.Measured("start %s failed: %s %s" % (name, r.status_code, r.text[:200]))
    return r.json()["id"], time.perf_counter() - t0


def first_result(target, kid, timeout):
    """Seconds to the first `1+1`'s reply over a new WebSocket (the kernel's first cell)."""
    t0 = time.perf_counter()
    ws = gb.WsKernel(target.url, target.token, kid, timeout)
    try:
        ws.run("1+1", deadline=time.monotonic() + timeout)
    finally:
        ws.close()
    return time.perf_counter() - t0


def jail_pids(target, kids):
    """Every process of these kernels' jails: the helpers (the gateway's children) and what runs below."""
    roots = set(db.children_map().get(target.proc.pid, []))
    for kid in kids:
        try:
            with open(os.path.join(target.run_dir, "s", kid, "jail.json")) as f:
                st = json.load(f)
            roots.update(p for p in (st.get("init_pid"), st.get("kernel_pid")) if p)
        except (OSError, ValueError):
            pass
    return db.descendants(roots) - {target.proc.pid}


def measure(target, names, a, rows):
    starts = {n: [] for n in names}
    firsts = {n: [] for n in names}
    for _ in range(a.rounds):
        for n in names:
            kid, took = start(target, n, a.timeout)
            try:
                starts[n].append(took)
                firsts[n].append(took + first_result(target, kid, a.timeout))
            finally:
                db.delete_kernels(target, [kid])
    for n in names:
        rows.append(("cold jailed start (POST to 201)", n, statistics.median(starts[n]), "s"))
        rows.append(("cold jailed start to first result", n, statistics.median(firsts[n]), "s"))
    for n in names:
        kids = []
        try:
            for _ in range(a.idle):
                kid, _ = start(target, n, a.timeout)
                kids.append(kid)
                first_result(target, kid, a.timeout)  # what a kernel costs once used, not bare
            time.sleep(a.settle)
            procs = jail_pids(target, kids)
            rows.append(("idle PSS per kernel", n, sum(db.pss_kib(p) for p in procs) / 1024.0 / len(kids), "MiB"))
        finally:
            db.delete_kernels(target, kids)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cellgate", default=os.environ.get("CELLGATE_BIN"), help="cellgate binary")
    p.add_argument("--rounds", type=int, default=7, help="cold starts per kernelspec, interleaved")
    p.add_argument("--idle", type=int, default=5, help="idle kernels per kernelspec for PSS")
    p.add_argument("--settle", type=float, default=3.0, help="seconds idle before measuring memory")
    p.add_argument("--timeout", type=float, default=180)
    p.add_argument("--quick", action="store_true", help="1 round, 1 idle kernel each")
    p.add_argument("--jsonl", action="store_true", help="JSON lines for bench/run.py")
    a = p.parse_args()
    if a.quick:
        a.rounds, a.idle, a.settle = 1, 1, 0.5
    if not (a.cellgate and os.access(a.cellgate, os.X_OK)):
        print("cellgate binary missing: %r" % a.cellgate, file=sys.stderr)
        return 1
    names = [n for n in KERNELS if n == "python3" or os.path.exists("/usr/share/jupyter/kernels/%s/kernel.json" % n)]
    for n in set(KERNELS) - set(names):
        print("# kernels: kernelspec %s is not installed; its figures are left out" % n, file=sys.stderr)
    target = tm.CellgateTarget(a.cellgate, spawner="jail", extra_args=[
        "--fork-server", "off", "--kernel-start-timeout", str(int(a.timeout)), "--max-kernels-per-user", "0"])
    rows, failed = [], False
    try:
        target.start()
        measure(target, names, a, rows)
    except Exception as e:
        failed = True
        print("# kernels: failed: %s: %s" % (type(e).__name__, e), file=sys.stderr)
    finally:
        target.stop()
    by_figure = {}
    for figure, name, value, unit in rows:
        by_figure.setdefault(figure, {})[name] = (value, unit)
    for figure, values in by_figure.items():
        ref = values.get("python3")
        for name, (value, unit) in values.items():
            if name == "python3":
                continue
            line = {"figure": "%s: %s" % (figure, KERNELS[name]), "value": value, "unit": unit, "group": "kernels"}
            out = [dict(line, backend="cellgate")]
            if ref:
                out.append(dict(line, backend="ipykernel", value=ref[0]))
            for o in out:
                if a.jsonl:
                    print(json.dumps(o))
                else:
                    print("%-48s %-10s %8.3f %s" % (o["figure"], o["backend"], o["value"], unit))
    if failed or not rows:
        if a.jsonl:
            print(json.dumps({"figure": "kernels bench", "value": None, "unit": "", "group": "kernels"}))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
