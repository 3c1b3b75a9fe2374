#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# cellgate-bench: figures
# Gateway benchmark: cellgate vs `jupyter server` vs a direct jupyter_client<->ipykernel ZMQ floor.
"""Measures, in one run and on the same machine:

  start          POST /api/kernels -> first kernel_info_reply over the WebSocket
                 (floor: KernelManager.start_kernel -> first kernel_info_reply over ZMQ)
  exec p50/p99   round trip of `1+1`: execute_request sent -> execute_reply and iopub idle received
  iopub 1 cell   one cell printing --big-mb MB; bytes of stream text received until iopub idle
                 (median MB/s of --big-runs runs)
  iopub 1MB cells  --cells cells each printing 1 MB (median MB/s of --cell-runs runs: one run of
                 20 cells takes ~0.2 s, and single runs of one binary moved by +-10% on this VM)
  gw CPU/exec    gateway process CPU time (user+sys, all threads) per `1+1` round trip (servers only)
  gw RSS idle    gateway resident set size once it answers HTTP, before any kernel (servers only)
  gw RSS         gateway resident set size after the run (servers only)

and prints one table with the figures and the ratios to the floor and to jupyter server (as
shipped, and "nodelay": with TCP_NODELAY set on its kernel WebSockets by a config file).

A/B of two cellgate binaries: --cellgate-b OLD adds the backend cellgate_b, and --rounds N runs
every backend N times, interleaved (the order flips each round, so a drift of the shared machine
hits both alike); each figure is then the median of its rounds, the ratio column cellgate/cellgate_b
compares new to old, and the rounds' own values follow the table. --metrics picks the measurements,
e.g. `--backends cellgate,cellgate_b --metrics exec,iopub_cells --rounds 5`.
jupyter server rate-limits iopub (1 MB/s by default) and drops data: the "received" rows report
how much of the printed data arrived. The WebSocket client is the same lean loop for every server:
websocket-client for the handshake and for sending, binary v1 framing when the server selects it, and
frames read by read_frame below (recv_into one buffer per message, no UTF-8 validation), because
websocket-client reads a frame 16 KiB at a time in Python and copies it twice: on a 50 MB output that
client, not the server, was the bottleneck.

A measurement is a function in METRICS; a backend is a class with start_kernel/execute/iopub;
adding a metric or a backend (e.g. jupyter server with other settings) is one entry. A row is
(value, unit, better[, target]); targets (issue #8) apply to cellgate and are printed by --jsonl
for bench/run.py (see its docstring for the target syntax).
"""
import argparse
import json
import os
import statistics
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))

import websocket  # noqa: E402
from jupyter_client.manager import KernelManager  # noqa: E402

import jupyter_ws as jws  # noqa: E402
import targets as tm  # noqa: E402

PRINT_CODE = ("import sys\n_l = 'x' * 1023 + '\\n'\n_w = sys.stdout.write\n"
              "for _ in range(%d):\n    _w(_l)\nsys.stdout.flush()\n")
MB = 1 << 20


def percentile(xs, p):
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, int(round(p / 100.0 * len(xs) + 0.5)) - 1))
    return xs[k]


def proc_cpu_seconds(pid):
    """CPU time of all live threads of pid, from /proc/PID/task/*/schedstat (ns, first field);
    /proc/PID/stat's utime+stime tick at 10 ms, too coarse for a few ms per execute."""
    total = 0
    task_dir = "/proc/%d/task" % pid
    for tid in os.listdir(task_dir):
        try:
            with open("%s/%s/schedstat" % (task_dir, tid)) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # the thread exited meanwhile
    return total / 1e9


def proc_rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


class Measured(Exception):
    """Raised by a measurement that could not complete; the cell shows 'fail'."""


# ------------------------------------------------------------------------------ server backend

def _recv_exact(sock, n):
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise Measured("connection closed by the server")
        got += k
    return buf


def read_frame(ws):
    """One whole data message (RFC 6455: text or binary, reassembled from continuations) as
    (opcode, bytes); answers pings on the way."""
    sock, parts, opcode = ws.sock, [], None
    while True:
        b0, b1 = _recv_exact(sock, 2)
        fin, op, n = b0 & 0x80, b0 & 0x0F, b1 & 0x7F
        if b1 & 0x80:
            raise Measured("masked frame from the server")
        if n == 126:
            n = int.from_bytes(_recv_exact(sock, 2), "big")
        elif n == 127:
            n = int.from_bytes(_recv_exact(sock, 8), "big")
        payload = _recv_exact(sock, n) if n else bytearray()
        if op == 0x9:
            ws.pong(bytes(payload))
            continue
        if op == 0xA:
            continue
        if op == 0x8:
            raise Measured("the server closed the WebSocket")
        if op != 0:
            opcode = op
        parts.append(payload)
        if fin:
            data = parts[0] if len(parts) == 1 else bytearray().join(parts)
            return opcode, data


class WsKernel:
    """Lean client of one kernel over the channels WebSocket."""

    def __init__(self, url, token, kernel_id, timeout):
        self.session = uuid.uuid4().hex
        self.ws = websocket.create_connection(
            jws.ws_url(url, kernel_id, self.session),
            header=["Authorization: token " + token], subprotocols=[jws.V1],
            timeout=timeout, skip_utf8_validation=True)
        self.v1 = self.ws.getsubprotocol() == jws.V1
        self.timeout = timeout

    def send(self, channel, msg_type, content):
        msg = jws.make_msg(msg_type, content, channel, self.session)
        if self.v1:
            self.ws.send_binary(jws.encode_v1(msg))
        else:
            self.ws.send(jws.encode_legacy(msg)[0])
        return msg["header"]["msg_id"]

    def recv(self):
        """-> (channel, msg_type, parent msg_id, content dict). Parses only what it needs."""
        opcode, data = read_frame(self.ws)
        if opcode == 0x1:
            data = data.decode()
        if self.v1:
            channel, parts = jws.decode_v1_parts(data)
            header = json.loads(parts[0])
            parent = json.loads(parts[1]) if parts[1] else {}
            return channel, header["msg_type"], parent.get("msg_id"), parts[3]
        msg = jws.decode_legacy(data)
        return (msg["channel"], msg["header"]["msg_type"], msg["parent_header"].get("msg_id"),
                msg["content"])

    def content(self, raw):
        return json.loads(raw) if isinstance(raw, (bytes, bytearray)) else raw

    def run(self, code, count_stream=False, deadline=None):
        """Execute; wait for execute_reply and iopub idle. Returns stream chars received."""
        msg_id = self.send("shell", "execute_request", {
            "code": code, "silent": False, "store_history": False, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": True})
        got_reply = got_idle = False
        received = 0
        while not (got_reply and got_idle):
            if deadline and time.monotonic() > deadline:
                raise Measured("timeout")
            channel, mtype, parent, raw = self.recv()
            if parent != msg_id:
                continue
            if mtype == "execute_reply":
                got_reply = True
            elif mtype == "status":
                got_idle = got_idle or (b'"idle"' in raw if isinstance(raw, (bytes, bytearray))
                                        else raw.get("execution_state") == "idle")
            elif count_stream and mtype == "stream":
                c = self.content(raw)
                if c.get("name") == "stdout":
                    received += len(c["text"])
        return received

    def close(self):
        self.ws.close()


class ServerBackend:
    def __init__(self, label, target):
        self.label, self.target = label, target
        self.kernel_id = None
        self.kws = None

    @property
    def pid(self):
        return self.target.proc.pid

    def start(self):
        self.target.start()
        self.idle_rss = proc_rss_mb(self.pid)

    def start_kernel(self, timeout):
        t0 = time.perf_counter()
        model = self.target.start_kernel()
        kws = WsKernel(self.target.url, self.target.token, model["id"], timeout)
        deadline = time.monotonic() + timeout
        msg_id = kws.send("shell", "kernel_info_request", {})
        while True:
            if time.monotonic() > deadline:
                raise Measured("no kernel_info_reply")
            _, mtype, parent, _ = kws.recv()
            if mtype == "kernel_info_reply" and parent == msg_id:
                break
        elapsed = time.perf_counter() - t0
        self.close_kernel()
        self.kernel_id, self.kws = model["id"], kws
        return elapsed

    def execute(self, code, count_stream=False, timeout=300):
        return self.kws.run(code, count_stream, time.monotonic() + timeout)

    def close_kernel(self):
        if self.kws:
            self.kws.close()
            self.target.delete_kernel(self.kernel_id)
        self.kws = self.kernel_id = None

    def stop(self):
        self.close_kernel()
        self.target.stop()


# ------------------------------------------------------------------------------- floor backend

class FloorBackend:
    """jupyter_client KernelManager + BlockingKernelClient straight to ipykernel over ZMQ."""

    label, pid, idle_rss = "floor", None, None

    def __init__(self):
        self.km = self.kc = None

    def start(self):
        pass

    def start_kernel(self, timeout):
        self.close_kernel()
        t0 = time.perf_counter()
        km = KernelManager(kernel_name="python3")
        km.start_kernel()
        kc = km.client()
        kc.start_channels()
        msg_id = kc.kernel_info()
        while True:
            m = kc.get_shell_msg(timeout=timeout)
            if m["parent_header"].get("msg_id") == msg_id:
                break
        elapsed = time.perf_counter() - t0
        self.km, self.kc = km, kc
        self._await_iopub(kc, timeout)
        return elapsed

    @staticmethod
    def _await_iopub(kc, timeout):
        """Outside the timing: the SUB socket may not be subscribed yet (ZMQ slow joiner), and an
        execute whose status messages are lost never completes. Nudge with kernel_info until an
        iopub message arrives, as jupyter_server does before it relays."""
        from queue import Empty
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            kc.kernel_info()
            try:
                kc.get_iopub_msg(timeout=0.5)
            except Empty:
                continue
            while True:  # drain the rest of that exchange
                try:
                    kc.get_iopub_msg(timeout=0.2)
                except Empty:
                    break
            while True:
                try:
                    kc.get_shell_msg(timeout=0.2)
                except Empty:
                    return
        raise Measured("no iopub message from the kernel")

    def execute(self, code, count_stream=False, timeout=300):
        kc = self.kc
        msg_id = kc.execute(code, store_history=False)
        deadline = time.monotonic() + timeout
        received, idle = 0, False
        while not idle:
            m = kc.get_iopub_msg(timeout=max(deadline - time.monotonic(), 0.01))
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            t = m["msg_type"]
            if t == "status" and m["content"]["execution_state"] == "idle":
                idle = True
            elif count_stream and t == "stream" and m["content"]["name"] == "stdout":
                received += len(m["content"]["text"])
        while kc.get_shell_msg(timeout=max(deadline - time.monotonic(), 0.01)
                               )["parent_header"].get("msg_id") != msg_id:
            pass
        return received

    def close_kernel(self):
        if self.kc:
            self.kc.stop_channels()
            self.km.shutdown_kernel(now=True)
        self.km = self.kc = None

    def stop(self):
        self.close_kernel()


# ------------------------------------------------------------------------------------ metrics

def m_start(b, a):
    times = [b.start_kernel(a.timeout) for _ in range(a.starts)]
    return {"start p50": (statistics.median(times) * 1e3, "ms", "lower")}


def m_exec(b, a):
    for _ in range(3):  # warm-up
        b.execute("1+1")
    rtts = []
    for _ in range(a.iterations):
        t0 = time.perf_counter()
        b.execute("1+1")
        rtts.append(time.perf_counter() - t0)
    out = {"exec 1+1 p50": (percentile(rtts, 50) * 1e3, "ms", "lower", "<= floor+0.2"),
           "exec 1+1 p99": (percentile(rtts, 99) * 1e3, "ms", "lower")}
    if b.pid:
        # Its own, longer loop: over 200 executes this figure moved by +-20% between runs of the same
        # binary; over 1,000 by less than the VM's own drift.
        cpu0 = proc_cpu_seconds(b.pid)
        for _ in range(a.cpu_iterations):
            b.execute("1+1")
        out["gw CPU/exec"] = ((proc_cpu_seconds(b.pid) - cpu0) / a.cpu_iterations * 1e3, "ms", "lower", "<= 0.1")
    return out


def iopub_rows(b, a, label, cells, mb_per_cell, runs=1):
    """Throughput is the median over runs (the machine may be shared); received is the worst run."""
    code = PRINT_CODE % (mb_per_cell * 1024)
    expected = cells * mb_per_cell * MB
    rates, recv = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        got = sum(b.execute(code, count_stream=True, timeout=a.timeout) for _ in range(cells))
        dt = time.perf_counter() - t0
        rates.append(got / MB / dt)
        recv.append(100.0 * got / expected)
    return {label: (statistics.median(rates), "MB/s", "higher", ">= 0.9x floor"),
            label + " recv": (min(recv), "%", "higher", ">= 100")}


def m_iopub_big(b, a):
    return iopub_rows(b, a, "iopub %dMB cell" % a.big_mb, 1, a.big_mb, a.big_runs)


def m_iopub_cells(b, a):
    return iopub_rows(b, a, "iopub %dx1MB cells" % a.cells, a.cells, 1, a.cell_runs)


def m_rss(b, a):
    if not b.pid:
        return {}
    out = {"gw RSS idle": (b.idle_rss, "MiB", "lower", "<= 20"),
           "gw RSS after run": (proc_rss_mb(b.pid), "MiB", "lower")}
    # cellgate gives the heap the big cells left back at its next 5 s trim (gateway/heap_policy.h):
    # right after the run that is a matter of phase, so also look once a trim has surely run.
    time.sleep(1 if a.quick else 6)
    out["gw RSS 6 s after run"] = (proc_rss_mb(b.pid), "MiB", "lower")
    return out


METRICS = [m_start, m_exec, m_iopub_big, m_iopub_cells, m_rss]


def run_rounds(make, labels, a):
    """{label: rows}, each row's value the median of a.rounds runs; and {label: {name: [values]}}.
    Round r runs the backends in order, reversed on odd rounds: interleaved, so that the load of a
    shared machine falls on each backend alike."""
    runs = {lab: [] for lab in labels}
    for r in range(a.rounds):
        for lab in (labels if r % 2 == 0 else labels[::-1]):
            print("# round %d/%d: running %s ..." % (r + 1, a.rounds, lab), file=sys.stderr, flush=True)
            runs[lab].append(run_backend(make[lab](), a))
    results, per_round = {}, {}
    for lab, rounds in runs.items():
        results[lab], per_round[lab] = {}, {}
        for name in [n for rows in rounds for n in rows]:
            vals = [rows[name][0] for rows in rounds if name in rows]
            proto = next(rows[name] for rows in rounds if name in rows)
            ok = [v for v in vals if v == v]
            value = statistics.median(ok) if len(ok) == len(vals) else float("nan")
            results[lab][name] = (value,) + tuple(proto[1:])
            per_round[lab][name] = vals
    return results, per_round


# -------------------------------------------------------------------------------------- table

def run_backend(b, a):
    rows = {}
    try:
        b.start()
        if m_start not in METRICS:
            b.start_kernel(a.timeout)  # the kernel the other measurements run on (m_start leaves one)
        for metric in METRICS:
            try:
                rows.update(metric(b, a))
            except Exception as e:  # one failed measurement must not hide the others
                print("# %s: %s failed: %s: %s" % (b.label, metric.__name__, type(e).__name__, e),
                      file=sys.stderr)
                rows.setdefault("failed: " + metric.__name__[2:], (float("nan"), "", "lower"))
            print("# %s: %s done" % (b.label, metric.__name__), file=sys.stderr, flush=True)
    finally:
        b.stop()
    return rows


def fmt(v):
    if v != v:  # NaN
        return "fail"
    return "%.3g" % v if abs(v) < 100 else "%.0f" % v


def print_table(results, labels):
    names = []
    for rows in results.values():
        names += [n for n in rows if n not in names]
    ratio_cols = [(x, "floor") for x in labels if x != "floor" and "floor" in labels]
    for js in ("cellgate_b", "jupyter_server", "jupyter_server_nodelay"):
        if "cellgate" in labels and js in labels:
            ratio_cols.append(("cellgate", js))
    head = ["metric", "unit"] + labels + ["%s/%s" % (x, y) for x, y in ratio_cols]
    lines = []
    for n in names:
        unit = better = ""
        cells = []
        for lab in labels:
            v = results.get(lab, {}).get(n)
            if v:
                unit, better = v[1], v[2]
            cells.append(fmt(v[0]) if v else "-")
        for x, y in ratio_cols:
            vx, vy = results.get(x, {}).get(n), results.get(y, {}).get(n)
            cells.append("%.2fx" % (vx[0] / vy[0]) if vx and vy and vy[0] and vx[0] == vx[0]
                         and vy[0] == vy[0] else "-")
        lines.append([n, unit + (" (%s better)" % better if better else "")] + cells)
    widths = [max(len(str(r[i])) for r in [head] + lines) for i in range(len(head))]
    out = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in [head] + lines]
    print("\n".join([out[0], "-" * len(out[0])] + out[1:]))
    return head, lines


def print_jsonl(results, labels):
    """One figure line per backend and row, for bench/run.py."""
    for lab in labels:
        for name, row in results.get(lab, {}).items():
            value = row[0] if row[0] == row[0] else None
            target = row[3] if len(row) > 3 and lab == "cellgate" else None
            print(json.dumps({"figure": name, "backend": lab, "value": value, "unit": row[1],
                              "target": target, "group": "hot path"}))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes: a smoke run (ctest)")
    p.add_argument("--cellgate", default=os.environ.get("CELLGATE_BIN"),
                   help="cellgate binary (default $CELLGATE_BIN); without it cellgate is skipped")
    p.add_argument("--spawner", default=os.environ.get("CELLGATE_TEST_SPAWNER", "plain"),
                   help="cellgate kernel spawner (default plain: unjailed kernels, like the floor's and "
                        "jupyter server's; bench/density measures jailed ones)")
    p.add_argument("--backends", default="floor,cellgate,jupyter_server,jupyter_server_nodelay",
                   help="comma list of: floor, cellgate, cellgate_b, jupyter_server, jupyter_server_nodelay")
    p.add_argument("--cellgate-b", help="a second cellgate binary (backend cellgate_b), for an A/B")
    p.add_argument("--rounds", type=int, default=1,
                   help="runs of every backend, interleaved; each figure is the median of its rounds")
    p.add_argument("--metrics", default="start,exec,iopub_big,iopub_cells,rss",
                   help="comma list of: " + ", ".join(m.__name__[2:] for m in METRICS))
    p.add_argument("--require-cellgate", action="store_true",
                   help="fail (exit 1) when the cellgate binary is missing")
    p.add_argument("--iterations", type=int, default=200)
    p.add_argument("--cpu-iterations", type=int, default=1000, help="executes over which gw CPU/exec is taken")
    p.add_argument("--starts", type=int, default=5)
    p.add_argument("--big-mb", type=int, default=50)
    p.add_argument("--big-runs", type=int, default=3, help="big cell runs (median throughput)")
    p.add_argument("--cells", type=int, default=20)
    p.add_argument("--cell-runs", type=int, default=3, help="runs of the --cells cells (median throughput)")
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--jsonl", action="store_true", help="JSON lines for bench/run.py, not a table")
    p.add_argument("--validate", action="store_true",
                   help="exit 1 unless every backend produced every figure")
    a = p.parse_args()
    if a.quick:
        a.iterations, a.cpu_iterations, a.starts, a.big_mb, a.cells, a.big_runs, a.cell_runs = 20, 20, 1, 2, 2, 1, 1
        a.timeout = min(a.timeout, 60)
    labels = [x.strip() for x in a.backends.split(",") if x.strip()]
    if a.cellgate_b and "cellgate_b" not in labels:
        labels.append("cellgate_b")
    known = {m.__name__[2:]: m for m in METRICS}
    picked = [x.strip() for x in a.metrics.split(",") if x.strip()]
    if a.rounds < 1 or not picked or any(x not in known for x in picked):
        p.error("--rounds must be >= 1 and --metrics a list of: " + ", ".join(known))
    METRICS[:] = [known[x] for x in picked]
    for lab, binary, flag in (("cellgate", a.cellgate, "--cellgate / CELLGATE_BIN"),
                              ("cellgate_b", a.cellgate_b, "--cellgate-b")):
        if lab in labels and not (binary and os.access(binary, os.X_OK)):
            if a.require_cellgate:
                print("%s binary missing: %r" % (lab, binary), file=sys.stderr)
                return 1
            print("# %s skipped: no binary (%s)" % (lab, flag), file=sys.stderr)
            labels.remove(lab)
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    make = {"floor": FloorBackend,
            "cellgate": lambda: ServerBackend("cellgate", tm.CellgateTarget(
                a.cellgate, spawner=a.spawner)),
            "cellgate_b": lambda: ServerBackend("cellgate_b", tm.CellgateTarget(
                a.cellgate_b, spawner=a.spawner)),
            "jupyter_server": lambda: ServerBackend("jupyter_server", tm.JupyterServerTarget()),
            "jupyter_server_nodelay": lambda: ServerBackend(
                "jupyter_server_nodelay", tm.JupyterServerTarget(config_py=tm.NODELAY_CONFIG))}
    results, per_round = run_rounds(make, labels, a)
    if a.jsonl:
        print_jsonl(results, labels)
        bad = [(lab, n) for lab in labels for n, r in results.get(lab, {}).items() if r[0] != r[0]]
        return 1 if bad else 0
    print("gateway bench: %s; iterations=%d starts=%d big=%dMB cells=%dx1MB spawner=%s"
          % (", ".join(labels), a.iterations, a.starts, a.big_mb, a.cells, a.spawner))
    for lab, binary in (("cellgate", a.cellgate), ("cellgate_b", a.cellgate_b)):
        if lab in labels:
            print("%s: %s" % (lab, os.path.realpath(binary)))
    sys.path.insert(0, os.path.join(HERE, ".."))
    import run as bench_run  # bench/run.py: the one host line every figure names
    print("host: %s; load %s" % (bench_run.machine_line(), bench_run.loadavg()))
    if a.rounds > 1:
        print("rounds: %d, interleaved (order flipped each round); figures are medians of the rounds"
              % a.rounds)
    head, lines = print_table(results, labels)
    if a.rounds > 1:
        print("\nper round:")
        for lab in labels:
            for name, vals in per_round[lab].items():
                print("  %-14s %-24s %s" % (lab, name, " ".join(fmt(v) for v in vals)))
        if "cellgate" in labels and "cellgate_b" in labels:
            # Each round's A and B ran back to back: their ratio cancels a drift the medians keep.
            print("\ncellgate/cellgate_b within each round (median):")
            for name, vals in per_round["cellgate"].items():
                ratios = [x / y for x, y in zip(vals, per_round["cellgate_b"].get(name, []))
                          if y and x == x and y == y]
                if ratios:
                    print("  %-24s %s  (%.2fx)" % (name, " ".join("%.2f" % r for r in ratios),
                                                  statistics.median(ratios)))
    if a.validate:
        bad = [(r[0], lab) for r in lines for lab, c in zip(labels, r[2:]) if c in ("fail", "-")
               and not (r[0].startswith("gw ") and lab == "floor")]
        if bad or any(r[0].startswith("failed") for r in lines):
            print("incomplete table: %r" % bad, file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
