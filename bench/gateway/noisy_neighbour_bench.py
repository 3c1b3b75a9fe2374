#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# cellgate-bench: figures
# Noisy-neighbour bench (issue 20): a well-behaved user's `1+1` while another user's five hostile
# kernels run at once, next to the same figure with none, in one run.
"""One jailed gateway with two users and the ordinary per-kernel limits a classroom operator sets
(LIMITS below, printed with the figures). alice keeps one kernel and sends `1+1` over its WebSocket,
one every --interval seconds; each round trip is execute_request sent -> execute_reply and iopub idle
received. The run has three phases, one after the other, each --samples round trips:

  quiet     nothing else runs
  hostile   mallory's five kernels attack at once, each in its own workspace, for as long as the phase
            lasts: a fork bomb, a memory bomb (a child that allocates until its cgroup's OOM killer
            kills it, again and again), a CPU spin on twice os.cpu_count() processes, a flood of the
            kernel's original stdout (the jail helper's log) and of its iopub stdout at once, and a
            disk flood into /workspace (write until the quota refuses, delete, again)
  quiet     again, after the hostile cells have ended

Figures: p50 and p99 of alice's round trip in the quiet phases (together) and the hostile one, and
their ratio (goal: hostile p99 <= 2x quiet p99); then what held each hostile kernel (its cgroup's own
counters: pids.events max, the OOM kills in memory.oom_control/memory.events, CPU throttling, the
log's size, the EDQUOT/ENOSPC the disk flood got) and the gateway's RSS before, at most during, and
after; and, per round trip, how long alice's kernel's threads and the gateway's waited for a CPU
(schedstat run_delay: where the added latency goes). The host's load average is printed with each
phase: the hostile phase raises it itself (the fork bomb's processes are runnable), so what decides
whether a figure is publishable is the load at the start, before the first phase (at most 2 on the
shared 2-vCPU VM). A benchmark, not a test: it asserts nothing about time.

Slowness never crashes it (the project's CI host is ~2x slower, under ctest -j2): a round trip that
fails or times out (60 s) is counted in the figure "noisy 1+1 failed round trips" and listed, and the
WebSocket reopened; a phase gives up after 3 failures in a row; every REST call is bounded and a
failed one is printed with its status and body; a hostile cell still running well past its end is
interrupted before its summary is asked for. Alice's WebSocket is pinged while the bench waits for the
hostile cells (the gateway closes one that sends nothing for 60 s). What fails the run (exit 1, one
last line saying so, the gateway's log before it): the gateway dying or not answering, or a kernel
that does not start.

    bench/gateway/noisy_neighbour_bench.py --cellgate build/bin/cellgate [--samples 400] [--jsonl]
        [--attacks fork,memory,cpu,log,disk]   (a subset, to see which attack makes the figure)
"""
import argparse
import glob
import json
import os
import statistics
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))
sys.path.insert(0, HERE)

import targets as tm  # noqa: E402
from gateway_bench import percentile, proc_cpu_seconds  # noqa: E402
from noisy_client import Alice, Fatal, KeepAlive, call, gateway_gone  # noqa: E402

# What a classroom operator sets per kernel on a small host (cellgate serve flags).
LIMITS = [("kernel-memory", "1G"), ("kernel-pids", "128"), ("kernel-cpus", "1"),
          ("workspace-bytes", "512M"), ("kernel-log-bytes", "1M"), ("kernel-output-rate", "16M")]
VOLUME = ("workspace-volume-size", "4G")

# Each hostile cell runs until END (a wall-clock time the bench puts in), then leaves a one-line
# summary in the global _noisy, which the bench prints with a second cell (the first cell's own
# output may be cut by --execute-output-limit, or the kernel killed).
FORK_BOMB = """
import os, time
END = %(end)r
root, forks, refused = os.getpid(), 0, 0
while time.time() < END:
    try:
        pid = os.fork()
    except OSError:
        refused += 1
        continue
    if pid == 0:
        forks = refused = 0
    else:
        forks += 1
if os.getpid() != root:
    os._exit(0)
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
_noisy = "forks %%d, refused (EAGAIN) %%d" %% (forks, refused)
"""

MEMORY_BOMB = """
import os, signal, time
END = %(end)r
kills, other = 0, 0
while time.time() < END:
    pid = os.fork()
    if pid == 0:
        hog = []
        while time.time() < END:
            hog.append(b'\\1' * (16 << 20))
        os._exit(0)
    _, st = os.waitpid(pid, 0)
    if os.WIFSIGNALED(st) and os.WTERMSIG(st) == signal.SIGKILL:
        kills += 1
    else:
        other += 1
_noisy = "children SIGKILLed %%d, ended otherwise %%d" %% (kills, other)
"""

CPU_SPIN = """
import os, time
END = %(end)r
n = 2 * (os.cpu_count() or 1)
kids = []
for _ in range(n - 1):
    pid = os.fork()
    if pid == 0:
        x = 0
        while time.time() < END:
            x += 1
        os._exit(0)
    kids.append(pid)
x = 0
while time.time() < END:
    x += 1
for pid in kids:
    os.waitpid(pid, 0)
_noisy = "spinning processes %%d" %% n
"""

LOG_FLOOD = """
import os, sys, threading, time
END = %(end)r
fd = getattr(sys.stdout, '_original_stdstream_copy', None) or 1
raw = [0]
def to_helper():
    line = b'x' * 4095 + b'\\n'
    while time.time() < END:
        raw[0] += os.write(fd, line * 16)
t = threading.Thread(target=to_helper)
t.start()
chunk, printed = ('y' * 1023 + '\\n') * 64, 0
while time.time() < END:
    sys.stdout.write(chunk)
    sys.stdout.flush()  # else ipykernel buffers it faster than it sends, until the cgroup OOM-kills the kernel
    printed += len(chunk)
t.join()
_noisy = "to the helper's log %%d MiB, printed to iopub %%d MiB" %% (raw[0] >> 20, printed >> 20)
"""

DISK_FLOOD = """
import errno, os, time
END = %(end)r
block = os.urandom(1 << 20)
written, cycles, errors = 0, 0, {}
while time.time() < END:
    try:
        with open('/workspace/flood.bin', 'wb') as f:
            while time.time() < END:
                written += f.write(block)
    except OSError as e:
        name = errno.errorcode.get(e.errno, str(e.errno))
        errors[name] = errors.get(name, 0) + 1
    try:
        os.remove('/workspace/flood.bin')
    except OSError:
        pass
    cycles += 1
_noisy = "wrote %%d MiB in %%d files; refused: %%s" %% (written >> 20, cycles, errors or "never")
"""

HOSTILE = [("fork bomb", FORK_BOMB), ("memory bomb", MEMORY_BOMB), ("cpu spin", CPU_SPIN),
           ("log flood", LOG_FLOOD), ("disk flood", DISK_FLOOD)]
# --attacks names each one by its first word: fork, memory, cpu, log, disk.
ATTACKS = {name.split()[0]: name for name, _ in HOSTILE}


def chosen(a):
    """The hostile kernels this run starts: --attacks (short names), else --only (full names), else all."""
    if a.attacks:
        want = [ATTACKS[w.strip()] for w in a.attacks.split(",") if w.strip()]
    elif a.only:
        want = a.only.split(",")
    else:
        return HOSTILE
    return [h for h in HOSTILE if h[0] in want]


def with_users(t):
    t.tokens = {"admin": t.add_user("admin", "--admin"), "alice": t.add_user("alice"),
                "mallory": t.add_user("mallory")}
    t.token = t.tokens["admin"]
    t.http.headers["Authorization"] = "token " + t.token


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def cpu_model():
    for line in read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            return '"%s"' % line.split(":", 1)[1].strip()
    return ""


def load():
    return os.getloadavg()[0]


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def counter(text, key):
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == key and parts[1].isdigit():
            return int(parts[1])
    return None


def cgroup_dirs(target, kid):
    """controller -> the kernel's cgroup dir (v1 per controller, else the v2 dir for all); "" when
    unknown (the kernel's jail status is gone: it died or is being restarted)."""
    try:
        # [<owner>/]<leaf>: a gateway puts each user's kernels under an owner level, cellgate/<owner>/<leaf>
        rel = target.jail_status(kid)["cgroup"].split("/cellgate/", 1)[1]
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return {"memory": "", "pids": "", "cpu": ""}
    dirs = {}
    for ctl in ("memory", "pids", "cpu"):
        found = glob.glob("/sys/fs/cgroup/%s/cellgate/%s" % (ctl, rel)) or \
            glob.glob("/sys/fs/cgroup/unified/cellgate/%s" % rel) + glob.glob("/sys/fs/cgroup/cellgate/%s" % rel)
        dirs[ctl] = found[0] if found else ""
    return dirs


def held_by(target, kid):
    """What the kernel's own cgroup counted: pids limit hits, OOM kills, peak memory, CPU throttling."""
    d = cgroup_dirs(target, kid)
    if not any(d.values()):
        return {"cgroup": "gone"}
    out = {}
    pids = counter(read(d["pids"] + "/pids.events"), "max")
    if pids is not None:
        out["pids.max hits"] = pids
    oom = counter(read(d["memory"] + "/memory.oom_control"), "oom_kill")
    if oom is None:
        oom = counter(read(d["memory"] + "/memory.events"), "oom_kill")
    if oom is not None:
        out["oom kills"] = oom
    peak = (read(d["memory"] + "/memory.max_usage_in_bytes") or read(d["memory"] + "/memory.peak")).strip()
    if peak.isdigit():
        out["memory peak MiB"] = int(peak) >> 20
    usage = (read(d["cpu"].replace("/cpu/", "/cpuacct/") + "/cpuacct.usage") or read(d["cpu"] + "/cpuacct.usage")).strip()
    if usage.isdigit():
        out["cpu s"] = round(int(usage) / 1e9, 1)
    quota = read(d["cpu"] + "/cpu.cfs_quota_us").strip() or read(d["cpu"] + "/cpu.max").strip()
    if quota:
        out["cpu quota"] = quota
    cpu = read(d["cpu"] + "/cpu.stat")
    if counter(cpu, "nr_throttled") is not None:
        out["cpu periods throttled"] = counter(cpu, "nr_throttled")
    return out


class Sampler(threading.Thread):
    """The gateway's RSS every 0.2 s, per phase."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.phase, self.rss, self.stop = pid, "setup", {}, False

    def run(self):
        while not self.stop:
            try:
                v = rss_mib(self.pid)
            except OSError:
                return
            self.rss.setdefault(self.phase, []).append(v)
            time.sleep(0.2)


def phase(t, alice, name, n, interval, deadline=None, timeout=60, give_up=3, each=None):
    """n round trips of `1+1` (fewer if deadline passes first, or after give_up failures in a row), one
    every interval s: (latencies of the ok ones in ms, round trips tried, gave up). Raises Fatal when
    the gateway is gone. each, when given, wraps every round trip (--trace)."""
    lat, tried, in_a_row = [], 0, 0
    for _ in range(n):
        if deadline is not None and time.time() > deadline:
            break
        tried += 1
        ms = each(lambda: alice.round_trip(name, timeout)) if each else alice.round_trip(name, timeout)
        if ms is not None:
            lat.append(ms)
            in_a_row = 0
        else:
            in_a_row += 1
            if t.proc.poll() is not None or in_a_row >= give_up:
                gone = gateway_gone(t)
                if gone:
                    raise Fatal(gone)
                if in_a_row >= give_up:
                    return lat, tried, True
        time.sleep(interval)
    return lat, tried, False


def run_delay_ms(pids):
    """Time the threads of pids spent runnable but waiting for a CPU (schedstat's second field), ms."""
    total = 0
    for pid in pids:
        try:
            tids = os.listdir("/proc/%d/task" % pid)
        except OSError:
            continue
        for tid in tids:
            fields = read("/proc/%d/task/%s/schedstat" % (pid, tid)).split()
            if len(fields) >= 2:
                total += int(fields[1])
    return total / 1e6


def gw_cpu_s(pid):
    try:
        return proc_cpu_seconds(pid)
    except OSError:
        return float("nan")


def start_kernel(t, client, body, who):
    """The new kernel's id; Fatal when it does not start (a gateway that cannot start a kernel before
    any attack fails the run, whatever the host's speed)."""
    r = call(client, "POST", "api/kernels", 180, json=body)
    if r.status == 201 and r.get("id"):
        return r.get("id")
    raise Fatal(gateway_gone(t) or "%s did not start: %s" % (who, r))


def stats(lat):
    """(p50, p99, max) in ms, None when no round trip ended ok."""
    return (statistics.median(lat), percentile(lat, 99), max(lat)) if lat else None


def summarize(t, mallory, kid, name, i, thread, notes, log_flood):
    """What one hostile kernel's cell says it did, and what held it."""
    if thread.is_alive():  # its cell runs on well past its end: interrupt it so that it can be asked
        r = call(mallory, "POST", "api/kernels/%s/interrupt" % kid, 60)
        notes.append("%s: its cell still ran at the end of the drain; interrupted it (%s)"
                     % (name, r.status if r.status else r))
    r = call(mallory, "POST", "api/kernels/%s/execute" % kid, 120, json={"code": "print(_noisy)", "timeout": 60})
    told = "".join(o.get("text", "") for o in r.get("outputs", []) if isinstance(o, dict)
                   and o.get("name") == "stdout").strip() if r.ok else ""
    if not told:
        told = "(no summary: %s)" % (("status %s" % r.get("status")) if r.ok else r)
    model = call(t, "GET", "api/kernels/" + kid, 30)
    cg = held_by(t, kid)
    if log_flood:
        try:
            cg["kernel.log bytes"] = os.path.getsize(os.path.join(t.run_dir, "s", kid, "kernel.log"))
        except OSError:
            pass
    state = model.get("execution_state", "?") if model.ok else "unknown (%s)" % model
    return name, i, told, cg, state, model.get("reason", "")


def measure(t, a, say, mark):
    """The three phases and what held the hostile kernels: (figures for --jsonl, report lines)."""
    gw = t.proc.pid
    hostile_set = chosen(a)
    alice_rest = tm.TokenClient(t, "alice", t.tokens["alice"])
    mallory = tm.TokenClient(t, "mallory", t.tokens["mallory"])
    good = start_kernel(t, alice_rest, {"name": "python3"}, "alice's kernel")
    hostile = [start_kernel(t, mallory, {"name": "python3", "workspace": "hostile%d" % i}, "mallory's %s kernel" % name)
               for i, (name, _) in enumerate(hostile_set)]
    notes = []
    for kid, (name, _) in zip(hostile, hostile_set):  # every kernel answers before the run starts
        r = call(mallory, "POST", "api/kernels/%s/execute" % kid, 180, json={"code": "1", "timeout": 120})
        if r.get("status") != "ok":
            notes.append("%s: its warm-up `1` did not end ok: %s" % (name, r))
    mark("%d kernels started" % (len(hostile) + 1))
    # Opened now: the starts above can outlast the gateway's idle limit for a silent WebSocket (60 s).
    alice = Alice(t, t.tokens["alice"], good)
    phase(t, alice, "warm", 30, a.interval)

    sampler = Sampler(gw)
    sampler.start()
    trace, t_start = (open(a.trace, "w") if a.trace else None), time.time()
    loads, cpu, waits, tried = {}, {}, {}, {}

    def measured(name, n, deadline=None):
        sampler.phase = name
        kpids = [int(x) for x in read(cgroup_dirs(t, good)["cpu"] + "/cgroup.procs").split() if x.isdigit()]
        w0 = (run_delay_ms(kpids), run_delay_ms([gw]))
        l0, c0, t0 = load(), gw_cpu_s(gw), time.perf_counter()
        each = None
        if trace is not None:
            def each(rt):  # where this one round trip's time went: who waited for a CPU, ms
                before = (run_delay_ms(kpids), run_delay_ms([gw]), run_delay_ms([os.getpid()]))
                began = time.time()
                ms = rt()
                after = (run_delay_ms(kpids), run_delay_ms([gw]), run_delay_ms([os.getpid()]))
                trace.write(json.dumps({"phase": name, "t": round(began - t_start, 3), "ms": ms and round(ms, 2),
                                        "kernel_wait": round(after[0] - before[0], 2), "gw_wait": round(after[1] - before[1], 2),
                                        "bench_wait": round(after[2] - before[2], 2)}) + "\n")
                return ms
        lat, tried[name], gave_up = phase(t, alice, name, n, a.interval, deadline, each=each)
        w1 = (run_delay_ms(kpids), run_delay_ms([gw]))
        waits[name] = ((w1[0] - w0[0]) / max(1, tried[name]), (w1[1] - w0[1]) / max(1, tried[name]))
        loads[name] = (l0, load())
        cpu[name] = (gw_cpu_s(gw) - c0) / (time.perf_counter() - t0)
        if gave_up:
            notes.append("%s phase: gave up after 3 failed round trips in a row" % name)
        mark("%s phase: %d of %d round trips ok" % (name, len(lat), tried[name]))
        return lat

    try:
        quiet1 = measured("quiet", a.samples)
        per_rt = (statistics.mean(quiet1) / 1000 if quiet1 else 0.1) + a.interval
        seconds = a.ramp + a.samples * per_rt * 3 + 10  # room for the phase to run 3x slower
        end = time.time() + seconds
        results = {}

        def attack(i, kid, code):
            r = call(mallory, "POST", "api/kernels/%s/execute" % kid, seconds + 180,
                     json={"code": code % {"end": end}, "timeout": int(seconds) + 120})
            results[i] = "%s, %+.0f s after its end" % ((r.status, r.get("status")) if r.ok else r, time.time() - end)

        threads = [threading.Thread(target=attack, args=(i, kid, code), daemon=True)
                   for i, (kid, (_, code)) in enumerate(zip(hostile, hostile_set))]
        for th in threads:
            th.start()
        sampler.phase = "ramp"
        time.sleep(a.ramp)
        hot = measured("hostile", a.samples, deadline=end - 1)
        sampler.phase = "drain"
        with KeepAlive(alice) as keep:
            join_by = max(end, time.time()) + (60 if a.quick else 150)
            for th in threads:
                th.join(timeout=max(0.1, join_by - time.time()))
            mark("hostile cells: %d of %d ended (they were to end %+.0f s from now)"
                 % (sum(not th.is_alive() for th in threads), len(threads), end - time.time()))
            held = [summarize(t, mallory, kid, name, i, threads[i], notes, name == "log flood")
                    for i, (kid, (name, _)) in enumerate(zip(hostile, hostile_set))]
        notes += ["alice's WebSocket keep-alive: " + p for p in keep.problems]
        mark("summaries asked")
        time.sleep(1)
        quiet2 = measured("quiet again", a.samples)
    finally:
        sampler.stop = True
        alice.drop()
        if trace is not None:
            trace.close()
    gone = gateway_gone(t)
    if gone:
        raise Fatal(gone)

    g = "noisy neighbour"
    figures = []
    quiet, q, h = quiet1 + quiet2, stats(quiet1 + quiet2), stats(hot)
    for fig, k in (("noisy 1+1 p50", 0), ("noisy 1+1 p99", 1)):
        if q:
            figures.append({"figure": fig, "backend": "quiet", "value": round(q[k], 3), "unit": "ms",
                            "target": None, "group": g})
        if h:
            figures.append({"figure": fig, "backend": "cellgate", "value": round(h[k], 3), "unit": "ms",
                            "target": "<= 2x quiet" if k == 1 else None, "group": g})
    figures.append({"figure": "noisy 1+1 failed round trips", "value": len(alice.failed), "unit": "",
                    "target": "<= 0", "group": g})
    rss = sampler.rss
    rss_before = max(rss.get("quiet") or [float("nan")])
    rss_during = max(rss.get("ramp", []) + rss.get("hostile", []) + rss.get("drain", []) or [float("nan")])
    rss_after = (rss.get("quiet again") or [float("nan")])[-1]
    if rss_during == rss_during and rss_before == rss_before:  # not NaN
        figures.append({"figure": "noisy gw RSS growth", "value": round(rss_during - rss_before, 1),
                        "unit": "MiB", "target": None, "group": g})
    figures.append({"figure": "noisy load avg at start", "value": round(loads["quiet"][0], 2),
                    "unit": "", "target": None, "group": g})

    def ms(v):
        return "%9.2f" % v

    report = ["limits: " + " ".join("--%s %s" % kv for kv in LIMITS + [VOLUME]),
              "%-12s %8s %6s %9s %9s %9s %14s %9s %s" % (
                  "phase", "samples", "failed", "p50 ms", "p99 ms", "max ms", "load (start-end)", "gw CPU/s",
                  "waiting for a CPU per 1+1: alice's kernel, gateway (ms)")]
    for name, lat in (("quiet", quiet1), ("hostile", hot), ("quiet again", quiet2)):
        s, (l0, l1) = stats(lat), loads[name]
        cols = [ms(v) for v in s] if s else ["%9s" % "-"] * 3
        report.append("%-12s %8d %6d %s %s %s %8.2f-%-5.2f %9.3f %.2f, %.2f" % (
            name, len(lat), tried[name] - len(lat), *cols, l0, l1, cpu[name], waits[name][0], waits[name][1]))
    if q and h:
        report.append("hostile/quiet: p50 %.2fx, p99 %.2fx (goal p99 <= 2x); quiet phases together: p50 %.2f ms, "
                      "p99 %.2f ms" % (h[0] / q[0], h[1] / q[1], q[0], q[1]))
    for name, lat in (("quiet", quiet), ("hostile", hot)):
        if not lat:
            report.append("no %s round trip ended ok: no %s latency figure" % (name, name))
    report.append("failed round trips: %d (alice's WebSocket reopened %d times)" % (len(alice.failed), alice.reconnects))
    report += ["  %s phase, after %d ms: %s" % f for f in alice.failed[:20]]
    if len(alice.failed) > 20:
        report.append("  ... and %d more" % (len(alice.failed) - 20))
    report.append("gateway RSS: %.1f MiB before, at most %.1f MiB while the hostile kernels ran, %.1f MiB after"
                  % (rss_before, rss_during, rss_after))
    for name, i, told, cg, state, reason in held:  # its answer as of now, the quiet-again phase over
        report.append("  %-11s execute %s; the cell says: %s; its cgroup: %s; kernel now %s%s"
                      % (name, results.get(i, "no answer yet"), told, ", ".join("%s %s" % kv for kv in cg.items()) or "-", state,
                         (" (%s)" % reason) if reason else ""))
    report += ["note: " + n for n in notes]
    report.append("load average at the start: %.2f (a figure is publishable at <= 2)" % loads["quiet"][0])
    report.append("host: Linux %s, %d vCPUs %s, %.0f GiB; load average now %s"
                  % (os.uname().release, os.cpu_count(), cpu_model(),
                     os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30,
                     " ".join("%.2f" % x for x in os.getloadavg())))
    return figures, report


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cellgate", required=True)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--jsonl", action="store_true")
    p.add_argument("--samples", type=int, default=400, help="round trips per phase (default 400)")
    p.add_argument("--interval", type=float, default=0.02, help="seconds between round trips (default 0.02)")
    p.add_argument("--ramp", type=float, default=3.0, help="seconds the hostile kernels run before sampling")
    p.add_argument("--trace", help="write one JSON line per round trip here: its phase, time, ms, and how long alice's "
                   "kernel, the gateway and the bench itself waited for a CPU during it (diagnosis)")
    p.add_argument("--log", type=int, default=0, help="print the gateway log's last N lines at the end")
    p.add_argument("--only", help="a comma-separated subset of the hostile kernels (diagnosis), e.g. 'cpu spin,log flood'")
    p.add_argument("--attacks", help="the same by short name: a comma-separated subset of %s, e.g. cpu,fork"
                   % ",".join(ATTACKS))
    a = p.parse_args()
    if a.attacks and any(w.strip() not in ATTACKS for w in a.attacks.split(",") if w.strip()):
        p.error("--attacks: each one of %s" % ",".join(ATTACKS))
    if a.quick:
        a.samples, a.ramp = 60, 2.0
    if os.geteuid() != 0:
        sys.exit("noisy_neighbour_bench: the jail needs root")
    flags = [x for name, value in LIMITS + [VOLUME] for x in ("--" + name, value)]
    t = tm.CellgateTarget(a.cellgate, spawner="jail", extra_args=flags, pre_start=with_users)
    say = (lambda *x: print(*x, file=sys.stderr, flush=True)) if a.jsonl else (lambda *x: print(*x, flush=True))
    t_zero = time.monotonic()

    def mark(what):
        print("noisy: +%.0f s: %s" % (time.monotonic() - t_zero, what), file=sys.stderr, flush=True)

    why, log_tail = None, ""
    try:
        try:
            t.start(timeout=120)
        except RuntimeError as e:  # it printed no URL line or did not answer: its log is in the message
            print(e, file=sys.stderr)
            raise Fatal("the gateway did not start: %s" % str(e).splitlines()[0])
        mark("gateway up")
        figures, report = measure(t, a, say, mark)
        if a.jsonl:
            for f in figures:
                print(json.dumps(f), flush=True)
        for line in report:
            say(line)
        if a.log:
            say(t.log_tail(a.log))
    except Fatal as e:
        why = str(e)
    except Exception as e:  # a bug of the bench: say so as clearly
        traceback.print_exc()
        why = "the bench raised %s: %s" % (type(e).__name__, str(e).splitlines()[0][:200] if str(e) else "")
    finally:
        if why:
            log_tail = t.log_tail(60)  # before stop() removes the temp dir
        try:
            t.stop()
        except Exception as e:
            why = (why + "; and " if why else "") + "cleanup failed: %s: %s" % (type(e).__name__, e)
    if why:
        if log_tail:
            print("--- the gateway's log, last 60 lines ---\n" + log_tail.rstrip("\n"), file=sys.stderr)
        print("noisy_neighbour_bench: FAILED: " + why, file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
