#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# cellgate-bench: figures
# Density benchmark: many idle jailed kernels on one gateway, and many WebSockets on a few kernels.
"""Measures, against one `cellgate serve` (jail spawner by default):

  kernels        starts --kernels idle kernels (default 200, --parallel at a time), then:
  PSS/kernel     the PSS (/proc/PID/smaps_rollup) of every process the kernels run in (jail helper,
                 init, kernel and its children), divided by the number of kernels
  exec p50/p99   `1+1` round trips across all of them: --rounds passes, one kernel after the other,
                 each over its own WebSocket, so every execute goes to a kernel that was idle
  1000 WS        opens --websockets WebSockets spread over --ws-kernels kernels; the gateway's RSS
                 growth per WebSocket; then one execute per kernel, and every socket must get its
                 iopub (execute_input, stream and idle status)
  thaw           on a second gateway with --pause-after 1: --pause-kernels kernels run `1+1`, are
                 frozen once idle (the kernel model says paused), and the first `1+1` after that,
                 which thaws the kernel, is timed (p50/max); beside it an execute on an awake kernel

and cleans up (kernels are deleted in parallel, the gateway stopped). Prints a table, or with
--jsonl one JSON line per figure ({"figure","backend","value","unit","target"}) for bench/run.py.
"""
import argparse
import concurrent.futures as cf
import json
import os
import resource
import statistics
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "gateway"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))

import requests  # noqa: E402

import gateway_bench as gb  # noqa: E402
import targets as tm  # noqa: E402


def children_map():
    kids = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/stat" % pid) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(pid))
    return kids


def descendants(roots):
    kids, out, todo = children_map(), set(), list(roots)
    while todo:
        p = todo.pop()
        if p not in out:
            out.add(p)
            todo.extend(kids.get(p, []))
    return out


def pss_kib(pid):
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def kernel_roots(target, kernel_ids):
    """The processes kernels run in: the gateway's children (plain spawner, or jail helpers still
    parented to it) plus every helper named by a kernel's status file (helpers setsid, and survive
    a gateway restart re-parented to init)."""
    roots = set(children_map().get(target.proc.pid, []))
    for kid in kernel_ids:
        for name in ("status", "status.json"):
            try:
                with open(os.path.join(target.run_dir, "s", kid, name)) as f:
                    st = json.load(f)
                roots.update(p for p in (st.get("helper_pid"), st.get("init_pid"), st.get("kernel_pid")) if p)
            except (OSError, ValueError):
                pass
    return roots


def start_kernels(target, n, parallel, timeout):
    def one(_):
        r = requests.post(target.url + "api/kernels", json={"name": "python3"}, timeout=timeout,
                          headers={"Authorization": "token " + target.token})
        if r.status_code != 201:
            raise gb.Measured("start failed: %s %s" % (r.status_code, r.text[:200]))
        return r.json()["id"]
    with cf.ThreadPoolExecutor(parallel) as ex:
        return list(ex.map(one, range(n)))


def delete_kernels(target, ids, parallel=8):
    def one(kid):
        try:
            requests.delete(target.url + "api/kernels/" + kid, timeout=60,
                            headers={"Authorization": "token " + target.token})
        except requests.RequestException:
            pass
    with cf.ThreadPoolExecutor(parallel) as ex:
        list(ex.map(one, ids))


def measure_kernels(target, a, rows):
    t0 = time.perf_counter()
    ids = start_kernels(target, a.kernels, a.parallel, a.timeout)
    rows["kernels started"] = (len(ids), "", ">= %d" % a.kernels)
    rows["start all"] = (time.perf_counter() - t0, "s", None)
    try:
        clients = [gb.WsKernel(target.url, target.token, kid, a.timeout) for kid in ids]
        for c in clients:  # the first execute of a kernel imports more; not what an idle kernel costs
            c.run("1+1", deadline=time.monotonic() + a.timeout)
        time.sleep(a.settle)
        procs = descendants(kernel_roots(target, ids)) - {target.proc.pid}
        rows["PSS/kernel"] = (sum(pss_kib(p) for p in procs) / 1024.0 / len(ids), "MiB", None)
        rtts = []
        for _ in range(a.rounds):
            for c in clients:
                t = time.perf_counter()
                c.run("1+1", deadline=time.monotonic() + a.timeout)
                rtts.append(time.perf_counter() - t)
        rows["exec p50 across kernels"] = (gb.percentile(rtts, 50) * 1e3, "ms", None)
        rows["exec p99 across kernels"] = (gb.percentile(rtts, 99) * 1e3, "ms", "<= 100")
        rows["gw RSS %d kernels" % len(ids)] = (gb.proc_rss_mb(target.proc.pid), "MiB", None)
        for c in clients:
            c.close()
    finally:
        delete_kernels(target, ids)


def measure_websockets(target, a, rows):
    ids = start_kernels(target, a.ws_kernels, a.parallel, a.timeout)
    socks = []
    try:
        # One socket per kernel first, so per-kernel state is not counted as per-socket cost.
        for kid in ids:
            socks.append((kid, gb.WsKernel(target.url, target.token, kid, a.timeout)))
            socks[-1][1].run("1+1", deadline=time.monotonic() + a.timeout)
        time.sleep(0.5)
        rss0 = gb.proc_rss_mb(target.proc.pid)
        for i in range(a.websockets - len(ids)):
            kid = ids[i % len(ids)]
            socks.append((kid, gb.WsKernel(target.url, target.token, kid, a.timeout)))
        time.sleep(0.5)
        rss1 = gb.proc_rss_mb(target.proc.pid)
        rows["WebSockets open"] = (len(socks), "", ">= %d" % a.websockets)
        rows["gw RSS/WebSocket"] = ((rss1 - rss0) * 1024.0 / (len(socks) - len(ids)), "KiB", "<= 32")
        # Every socket of a kernel must see the iopub of an execute sent on one of them.
        marker = uuid.uuid4().hex
        sent = {}
        for kid in ids:
            ws = next(w for k, w in socks if k == kid)
            sent[kid] = ws.send("shell", "execute_request", {
                "code": "print(%r)" % marker, "silent": False, "store_history": False,
                "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
        got = 0
        deadline = time.monotonic() + a.timeout
        for kid, ws in socks:
            seen = set()
            while seen != {"execute_input", "stream", "idle"} and time.monotonic() < deadline:
                channel, mtype, parent, raw = ws.recv()
                if channel != "iopub" or parent != sent[kid]:
                    continue
                if mtype == "status":
                    if ws.content(raw).get("execution_state") == "idle":
                        seen.add("idle")
                elif mtype == "stream" and marker in ws.content(raw).get("text", ""):
                    seen.add("stream")
                elif mtype == "execute_input":
                    seen.add("execute_input")
            got += seen == {"execute_input", "stream", "idle"}
        rows["WebSockets that got iopub"] = (100.0 * got / len(socks), "%", ">= 100")
        # Issue #8: at most 20 MiB idle plus 32 KiB per open WebSocket, the two together.
        rows["gw RSS %d WebSockets" % len(socks)] = (rss1, "MiB", "<= %.4g" % (20 + len(socks) * 32 / 1024.0))
    finally:
        for _, ws in socks:
            try:
                ws.close()
            except Exception:
                pass
        delete_kernels(target, ids)


def wait_paused(target, kid, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = requests.get(target.url + "api/kernels/" + kid, timeout=10,
                         headers={"Authorization": "token " + target.token})
        if r.status_code == 200 and r.json().get("paused") is True:
            return
        time.sleep(0.1)
    raise gb.Measured("kernel %s was not paused within %.0f s" % (kid, timeout))


def measure_pause(a, gw_args, rows):
    """Its own gateway: pausing idle kernels must not slow the other steps' executes."""
    target = tm.CellgateTarget(a.cellgate, spawner=a.spawner, extra_args=gw_args + ["--pause-after", "1"])
    target.start()
    clients = []
    try:
        ids = start_kernels(target, a.pause_kernels, a.parallel, a.timeout)
        clients = [gb.WsKernel(target.url, target.token, kid, a.timeout) for kid in ids]
        awake, thaw = [], []
        for c in clients:
            c.run("1+1", deadline=time.monotonic() + a.timeout)
            t = time.perf_counter()  # right after an execute: the kernel is not paused yet
            c.run("1+1", deadline=time.monotonic() + a.timeout)
            awake.append(time.perf_counter() - t)
        for kid, c in zip(ids, clients):
            wait_paused(target, kid, 30)
            t = time.perf_counter()
            c.run("1+1", deadline=time.monotonic() + a.timeout)
            thaw.append(time.perf_counter() - t)
        rows["exec on a paused kernel p50"] = (statistics.median(thaw) * 1e3, "ms", None)
        rows["exec on a paused kernel max"] = (max(thaw) * 1e3, "ms", "<= 100")
        rows["exec on an awake kernel p50"] = (statistics.median(awake) * 1e3, "ms", None)
    finally:
        for c in clients:
            try:
                c.close()
            except Exception:
                pass
        target.stop()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cellgate", default=os.environ.get("CELLGATE_BIN"), help="cellgate binary")
    p.add_argument("--spawner", default="jail")
    p.add_argument("--fork-server", default="on", choices=("on", "off"),
                   help="start kernels from cellgate-zygote (jail spawner only; default on)")
    p.add_argument("--kernels", type=int, default=200)
    p.add_argument("--parallel", type=int, default=8, help="kernel starts in flight")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--settle", type=float, default=2.0, help="seconds idle before measuring memory")
    p.add_argument("--websockets", type=int, default=1000)
    p.add_argument("--ws-kernels", type=int, default=4)
    p.add_argument("--pause-kernels", type=int, default=10, help="kernels paused and thawed")
    p.add_argument("--timeout", type=float, default=120)
    p.add_argument("--quick", action="store_true", help="3 kernels, 40 WebSockets")
    p.add_argument("--jsonl", action="store_true", help="JSON lines for bench/run.py")
    a = p.parse_args()
    if a.quick:
        a.kernels, a.rounds, a.websockets, a.ws_kernels, a.settle, a.pause_kernels = 3, 2, 40, 2, 0.5, 2
    if not (a.cellgate and os.access(a.cellgate, os.X_OK)):
        print("cellgate binary missing: %r" % a.cellgate, file=sys.stderr)
        return 1
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)  # our end of the WebSockets
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    # The gateway's defaults protect a shared server (64 WebSockets per user); this bench is one
    # user holding --websockets sockets and --kernels kernels, so it lifts the per-user caps.
    gw_args = ["--max-connections-per-user", "0", "--max-kernels-per-user", "0", "--max-kernels", "0"]
    if a.spawner == "jail":
        gw_args += ["--fork-server", a.fork_server]
    target = tm.CellgateTarget(a.cellgate, spawner=a.spawner, extra_args=gw_args)
    rows = {}
    failed = False
    try:
        target.start()
        rows["gw RSS at start"] = (gb.proc_rss_mb(target.proc.pid), "MiB", None)  # the target row is the gateway bench's
        # WebSockets first: on a fresh gateway RSS growth is theirs, not reuse of what kernels freed.
        for step in (measure_websockets, measure_kernels):
            print("# density: %s ..." % step.__name__, file=sys.stderr, flush=True)
            try:
                step(target, a, rows)
            except Exception as e:  # one failed step must not hide the other
                failed = True
                print("# density: %s failed: %s: %s" % (step.__name__, type(e).__name__, e), file=sys.stderr)
                rows["failed: " + step.__name__] = (None, "", None)
    finally:
        target.stop()
    print("# density: measure_pause ...", file=sys.stderr, flush=True)
    try:
        measure_pause(a, gw_args, rows)
    except Exception as e:
        failed = True
        print("# density: measure_pause failed: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        rows["failed: measure_pause"] = (None, "", None)
    for name, (value, unit, target_expr) in rows.items():
        if a.jsonl:
            print(json.dumps({"figure": name, "backend": "cellgate", "value": value, "unit": unit,
                              "target": target_expr, "group": "density"}))
        else:
            print("%-28s %10s %-4s %s" % (name, "fail" if value is None else "%.4g" % value, unit,
                                          target_expr or ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
