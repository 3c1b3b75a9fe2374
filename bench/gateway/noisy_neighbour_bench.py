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

    bench/gateway/noisy_neighbour_bench.py --cellgate build/bin/cellgate [--samples 400] [--jsonl]
"""
import argparse
import glob
import json
import os
import statistics
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))
sys.path.insert(0, HERE)

import jupyter_ws as jws  # noqa: E402
import targets as tm  # noqa: E402
from gateway_bench import percentile, proc_cpu_seconds  # noqa: E402

# What a classroom operator sets per kernel on a small host (cellgate serve flags).
LIMITS = [("kernel-memory", "1G"), ("kernel-pids", "128"), ("kernel-cpus", "1"),
          ("workspace-bytes", "512M"), ("kernel-log-bytes", "1M")]
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
        if len(parts) == 2 and parts[0] == key:
            return int(parts[1])
    return None


def cgroup_dirs(target, kid):
    """controller -> the kernel's cgroup dir (v1 per controller, else the v2 dir for all)."""
    leaf = os.path.basename(target.jail_status(kid)["cgroup"])
    dirs = {}
    for ctl in ("memory", "pids", "cpu"):
        found = glob.glob("/sys/fs/cgroup/%s/cellgate/%s" % (ctl, leaf)) or \
            glob.glob("/sys/fs/cgroup/unified/cellgate/%s" % leaf) + glob.glob("/sys/fs/cgroup/cellgate/%s" % leaf)
        dirs[ctl] = found[0] if found else ""
    return dirs


def held_by(target, kid):
    """What the kernel's own cgroup counted: pids limit hits, OOM kills, peak memory, CPU throttling."""
    d = cgroup_dirs(target, kid)
    out = {}
    pids = counter(read(d["pids"] + "/pids.events"), "max")
    if pids is not None:
        out["pids.max hits"] = pids
    oom = counter(read(d["memory"] + "/memory.oom_control"), "oom_kill")
    if oom is None:
        oom = counter(read(d["memory"] + "/memory.events"), "oom_kill")
    if oom is not None:
        out["oom kills"] = oom
    peak = read(d["memory"] + "/memory.max_usage_in_bytes") or read(d["memory"] + "/memory.peak")
    if peak.strip():
        out["memory peak MiB"] = int(peak) >> 20
    usage = read(d["cpu"].replace("/cpu/", "/cpuacct/") + "/cpuacct.usage") or read(d["cpu"] + "/cpuacct.usage")
    if usage.strip():
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


def phase(kws, n, interval, deadline=None):
    """n round trips of `1+1` (fewer if deadline passes first), one every interval s: latencies in ms."""
    lat = []
    for _ in range(n):
        if deadline is not None and time.time() > deadline:
            break
        t0 = time.perf_counter()
        r = kws.execute("1+1", timeout=120)
        lat.append((time.perf_counter() - t0) * 1000)
        assert r.reply["content"]["status"] == "ok", r.reply["content"]
        kws.seen.clear()
        time.sleep(interval)
    return lat


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


def summary(lat):
    return statistics.median(lat), percentile(lat, 99)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cellgate", required=True)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--jsonl", action="store_true")
    p.add_argument("--samples", type=int, default=400, help="round trips per phase (default 400)")
    p.add_argument("--interval", type=float, default=0.02, help="seconds between round trips (default 0.02)")
    p.add_argument("--ramp", type=float, default=3.0, help="seconds the hostile kernels run before sampling")
    p.add_argument("--log", type=int, default=0, help="print the gateway log's last N lines at the end")
    p.add_argument("--only", help="a comma-separated subset of the hostile kernels (diagnosis), e.g. 'cpu spin,log flood'")
    a = p.parse_args()
    if a.quick:
        a.samples, a.ramp = 60, 2.0
    hostile_set = HOSTILE
    if a.only:
        hostile_set = [h for h in HOSTILE if h[0] in a.only.split(",")]
    if os.geteuid() != 0:
        sys.exit("noisy_neighbour_bench: the jail needs root")
    flags = [x for name, value in LIMITS + [VOLUME] for x in ("--" + name, value)]
    t = tm.CellgateTarget(a.cellgate, spawner="jail", extra_args=flags, pre_start=with_users)
    say = (lambda *x: print(*x, file=sys.stderr)) if a.jsonl else print
    sampler = None
    try:
        t.start()
        gw = t.proc.pid
        alice = tm.TokenClient(t, "alice", t.tokens["alice"])
        mallory = tm.TokenClient(t, "mallory", t.tokens["mallory"])
        r = alice.api("POST", "api/kernels", json={"name": "python3"})
        assert r.status_code == 201, (r.status_code, r.text)
        good = r.json()["id"]
        kws = jws.KernelWS(t.url, t.tokens["alice"], good)
        hostile = []
        for i, (name, _) in enumerate(hostile_set):
            r = mallory.api("POST", "api/kernels", json={"name": "python3", "workspace": "hostile%d" % i})
            assert r.status_code == 201, (r.status_code, r.text)
            hostile.append(r.json()["id"])
        for kid in hostile:  # every kernel answers before the run starts
            r = mallory.api("POST", "api/kernels/%s/execute" % kid, json={"code": "1", "timeout": 60}, timeout=90)
            assert r.status_code == 200, r.text
        phase(kws, 30, a.interval)  # warm

        sampler = Sampler(gw)
        sampler.start()
        loads, cpu, waits = {}, {}, {}

        def measured(name, n, deadline=None):
            sampler.phase = name
            kpids = [int(x) for x in read(cgroup_dirs(t, good)["cpu"] + "/cgroup.procs").split()]
            w0 = (run_delay_ms(kpids), run_delay_ms([gw]))
            l0, c0, t0 = load(), proc_cpu_seconds(gw), time.perf_counter()
            lat = phase(kws, n, a.interval, deadline)
            w1 = (run_delay_ms(kpids), run_delay_ms([gw]))
            waits[name] = ((w1[0] - w0[0]) / len(lat), (w1[1] - w0[1]) / len(lat))
            loads[name] = (l0, load())
            cpu[name] = (proc_cpu_seconds(gw) - c0) / (time.perf_counter() - t0)
            return lat

        quiet1 = measured("quiet", a.samples)
        per_rt = statistics.mean(quiet1) / 1000 + a.interval
        seconds = a.ramp + a.samples * per_rt * 3 + 10  # room for the phase to run 3x slower
        end = time.time() + seconds
        results = {}

        def attack(i, kid, code):
            r = mallory.api("POST", "api/kernels/%s/execute" % kid,
                            json={"code": code % {"end": end}, "timeout": int(seconds) + 120}, timeout=seconds + 180)
            results[i] = r.status_code, (r.json().get("status") if r.status_code == 200 else r.text[:200])

        threads = [threading.Thread(target=attack, args=(i, kid, code), daemon=True)
                   for i, (kid, (_, code)) in enumerate(zip(hostile, hostile_set))]
        for th in threads:
            th.start()
        sampler.phase = "ramp"
        time.sleep(a.ramp)
        hot = measured("hostile", a.samples, deadline=end - 1)
        sampler.phase = "drain"
        for th in threads:
            th.join(timeout=max(1, end - time.time()) + 150)
        held = []
        for i, (kid, (name, _)) in enumerate(zip(hostile, hostile_set)):
            r = mallory.api("POST", "api/kernels/%s/execute" % kid, json={"code": "print(_noisy)", "timeout": 60}, timeout=90)
            told = "".join(o.get("text", "") for o in r.json().get("outputs", []) if o.get("name") == "stdout").strip() \
                if r.status_code == 200 else ""
            model = t.get("api/kernels/" + kid).json()
            log = os.path.join(t.run_dir, "s", kid, "kernel.log")
            cg = held_by(t, kid)
            if name == "log flood" and os.path.exists(log):
                cg["kernel.log bytes"] = os.path.getsize(log)
            held.append((name, results.get(i), told or "(no summary: %s)" % r.text[:120], cg,
                         model.get("execution_state"), model.get("reason", "")))
        time.sleep(1)
        quiet2 = measured("quiet again", a.samples)
        sampler.stop = True

        quiet = quiet1 + quiet2
        q50, q99 = summary(quiet)
        h50, h99 = summary(hot)
        rss = sampler.rss
        rss_before = max(rss.get("quiet", [float("nan")]))
        rss_during = max(rss.get("ramp", []) + rss.get("hostile", []) + rss.get("drain", []))
        rss_after = rss.get("quiet again", [float("nan")])[-1]
        if a.jsonl:
            g = "noisy neighbour"
            for fig, qv, hv in (("noisy 1+1 p50", q50, h50), ("noisy 1+1 p99", q99, h99)):
                print(json.dumps({"figure": fig, "backend": "quiet", "value": round(qv, 3), "unit": "ms",
                                  "target": None, "group": g}))
                print(json.dumps({"figure": fig, "backend": "cellgate", "value": round(hv, 3), "unit": "ms",
                                  "target": "<= 2x quiet" if fig.endswith("p99") else None, "group": g}))
            print(json.dumps({"figure": "noisy gw RSS growth", "value": round(rss_during - rss_before, 1),
                              "unit": "MiB", "target": None, "group": g}))
            print(json.dumps({"figure": "noisy load avg at start", "value": round(loads["quiet"][0], 2),
                              "unit": "", "target": None, "group": g}))
        say("limits: " + " ".join("--%s %s" % kv for kv in LIMITS + [VOLUME]))
        say("%-12s %8s %9s %9s %9s %14s %9s %s" % ("phase", "samples", "p50 ms", "p99 ms", "max ms", "load (start-end)",
                                                "gw CPU/s", "waiting for a CPU per 1+1: alice's kernel, gateway (ms)"))
        for name, lat in (("quiet", quiet1), ("hostile", hot), ("quiet again", quiet2)):
            l0, l1 = loads[name]
            say("%-12s %8d %9.2f %9.2f %9.2f %8.2f-%-5.2f %9.3f %.2f, %.2f" % (name, len(lat), statistics.median(lat),
                percentile(lat, 99), max(lat), l0, l1, cpu[name], waits[name][0], waits[name][1]))
        say("hostile/quiet: p50 %.2fx, p99 %.2fx (goal p99 <= 2x); quiet phases together: p50 %.2f ms, p99 %.2f ms"
            % (h50 / q50, h99 / q99, q50, q99))
        say("gateway RSS: %.1f MiB before, at most %.1f MiB while the hostile kernels ran, %.1f MiB after"
            % (rss_before, rss_during, rss_after))
        for name, res, told, cg, state, reason in held:
            say("  %-11s execute %s; the cell says: %s; its cgroup: %s; kernel now %s%s"
                % (name, res, told, ", ".join("%s %s" % kv for kv in cg.items()) or "-", state,
                   (" (%s)" % reason) if reason else ""))
        say("load average at the start: %.2f (a figure is publishable at <= 2)" % loads["quiet"][0])
        say("host: Linux %s, %d vCPUs %s, %.0f GiB; load average now %s"
            % (os.uname().release, os.cpu_count(), cpu_model(), os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30,
               " ".join("%.2f" % x for x in os.getloadavg())))
        if a.log:
            say(t.log_tail(a.log))
    finally:
        if sampler:
            sampler.stop = True
        t.stop()


if __name__ == "__main__":
    main()
