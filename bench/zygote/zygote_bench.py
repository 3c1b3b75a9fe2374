#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# cellgate-bench: figures
"""zygote_bench: fork-server kernels (cellgate-zygote) against cold jailed ipykernels, in one run.

Needs root (it builds real jails). For each mode it starts real jailed ipykernels exactly as the gateway
does (the same cellgate-jail command line, through the zygote's socket or by running the helper) and
prints:
  - start: request -> kernel_info_reply on shell, sequential starts (median and p90); and through a
    real `cellgate serve` (--fork-server off / on): POST /api/kernels -> 201, which the gateway
    answers once the kernel has answered kernel_info;
  - per phase, per process (helper: the fork and its jail setup; init: its setup; kernel: adoption until
    it answered; then its first execute, `1+1`): CPU and minor page faults. Fault counts do not move
    with the machine's load and carry over to hosts where a fault costs far more (issue 26: a PVM
    guest); wall times do neither;
  - parallel: N kernels requested at once -> the last kernel_info_reply (the median of --parallel-runs
    batches: one batch moves by ~15% between runs on this 2-core VM);
  - memory of an idle kernel with the parallel batch alive: the sum of Pss and of USS over its jail's
    processes, their page tables (VmPTE) and mappings (host memory smaps does not show), and the
    zygote's own PSS spread over the batch.
Targets (issue 26, ratios to the cold jail measured in the same run): CPU per start <= 0.1x, 20 in
parallel <= 0.15x, PSS per idle kernel <= 0.2x; start <= 150 ms (issue 8).

usage: zygote_bench.py --bin BUILD/bin [--runs N] [--parallel N] [--parallel-runs N] [--short] [--zygote-only]
                      [--compare-args ARGS] [--compare-bin DIR] [--json FILE]
                      [--memory-merge N[,N...] [--ksm NAME=VALUE,...] [--merge-timeout S]]
       zygote_bench.py --jsonl --cellgate BUILD/bin/cellgate [--quick]     (for bench/run.py)
--jsonl prints one JSON line per figure instead of the table: the fork server as backend "cellgate"
(with the issue's targets), cold jailed starts as the reference backend "cold_jail"; group "fork server".
--zygote-only skips the cold starts and the gateway (a lighter run to compare two zygotes).
--compare-bin DIR adds a second zygote from DIR/cellgate-zygote (another build: an A/B of two commits),
--compare-args '--shed-image off' one with those arguments (both: that build with them), its starts and batches
interleaved with the first's: an A/B of two settings under the same load, in one run.
--memory-merge 20,200 then starts N idle forked kernels without and N with the jail's --memory-merge on, runs ksmd
(KSM) with --ksm's settings until it has merged, and prints PSS and USS per kernel for both (beside the cold jail's
PSS of the same run), the time to merge, ksmd's CPU (its thread's run time) and what it did to the fork server's
huge pages; every KSM setting it changed is put back as found (run last).
(exits 1 when a figure is malformed, 4 when it cannot run here)
"""
import argparse
import array
import json
import math
import os
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid

import zmq
from jupyter_client.connect import write_connection_file
from jupyter_client.session import Session

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import run as bench_run  # noqa: E402  (bench/run.py: the host line)

RUN = "/run/cellgate"
KERNEL_CMD = ["/usr/bin/python3", "-m", "ipykernel_launcher", "-f"]
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "IPYTHONDIR": "/tmp/.ipython",
       "MPLBACKEND": "module://matplotlib_inline.backend_inline"}


class Kernel:
    def __init__(self):
        self.kid = "zb" + uuid.uuid4().hex[:12]
        self.runtime = f"{RUN}/k/{self.kid}"
        self.private = f"{RUN}/s/{self.kid}"
        os.makedirs(self.runtime, mode=0o700)
        os.makedirs(self.private, mode=0o700)
        self.conn = self.runtime + "/connection.json"
        write_connection_file(self.conn, transport="ipc", ip=self.runtime + "/k")
        with open(self.conn) as f:
            self.info = json.load(f)
        self.extra = []  # jail options before the others (--memory-merge on)
        self.helper = None
        self.popen = None
        self.pidfd = None
        self.ready = None
        self.status = None

    def jail_args(self, ready_fd=3):
        args = self.extra + ["--name", self.kid, "--bind-same", self.runtime, "--status-file", self.private + "/jail.json",
                "--ready-fd", str(ready_fd)]
        for k, v in sorted(ENV.items()):
            args += ["--env", f"{k}={v}"]
        return args + ["--"] + KERNEL_CMD + [self.conn]

    def start_cold(self, jail):
        r, w = os.pipe()
        log = open(self.private + "/kernel.log", "ab")
        self.popen = subprocess.Popen([jail] + self.jail_args(w), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                      pass_fds=(w,), start_new_session=True,
                                      env={"PATH": "/usr/bin:/bin"})
        os.close(w)
        log.close()
        self.helper = self.popen.pid
        self.ready = r

    def start_zygote(self, sock_path):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.connect(sock_path)
        r, w = os.pipe()
        devnull = os.open("/dev/null", os.O_RDONLY)
        log = os.open(self.private + "/kernel.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        payload = b"CGZ1\0" + b"".join(a.encode() + b"\0" for a in self.jail_args())
        s.sendmsg([payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [devnull, log, w]))])
        for fd in (w, devnull, log):
            os.close(fd)
        msg, anc, _, _ = s.recvmsg(16, socket.CMSG_SPACE(4))
        s.close()
        _, err, pid, _ = array.array("i", msg)
        if err:
            raise RuntimeError(f"zygote refused: {os.strerror(err)}")
        self.helper = pid
        self.pidfd = array.array("i", anc[0][2])[0]
        self.ready = r

    def wait_ready_line(self):
        line = b""
        while not line.endswith(b"\n"):
            chunk = os.read(self.ready, 4096)
            if not chunk:
                break
            line += chunk
        os.close(self.ready)
        self.status = json.loads(line)
        if self.status.get("state") != "running":
            raise RuntimeError(f"jail failed: {self.status}")

    def shell_request(self, ctx, msg_type, content, deadline):
        """Sends one shell request at once (ZeroMQ queues it until the kernel binds); True at its reply."""
        session = Session(key=self.info["key"].encode(), signature_scheme=self.info["signature_scheme"])
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.RECONNECT_IVL, 5)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(f"ipc://{self.info['ip']}-{self.info['shell_port']}")
        session.send(sock, msg_type, content)
        reply = msg_type.replace("_request", "_reply")
        try:
            while time.monotonic() < deadline:
                if sock.poll(int(max(1, (deadline - time.monotonic()) * 1000))):
                    _, msg = session.recv(sock)
                    if msg and msg["msg_type"] == reply:
                        return True
            return False
        finally:
            sock.close()

    def kernel_info(self, ctx, deadline):
        return self.shell_request(ctx, "kernel_info_request", {}, deadline)

    def execute(self, ctx, code, deadline):
        return self.shell_request(ctx, "execute_request", {
            "code": code, "silent": False, "store_history": True, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": True}, deadline)

    def pids(self):
        return [self.status[k] for k in ("helper_pid", "init_pid", "kernel_pid")]

    def stop(self):
        try:
            os.kill(self.helper, signal.SIGUSR1)  # the helper kills the whole jail and cleans up
        except ProcessLookupError:
            pass
        if self.popen is not None:
            self.popen.wait(timeout=10)
        elif self.pidfd is not None:
            select.select([self.pidfd], [], [], 10)
            os.close(self.pidfd)
        shutil.rmtree(self.runtime, ignore_errors=True)
        shutil.rmtree(self.private, ignore_errors=True)


def rollup_kib(pid, *keys):
    """Sum of the given smaps_rollup fields (KiB); 0 for a process that is gone."""
    total = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.split(":")[0] in keys:
                    total += int(line.split()[1])
    except OSError:
        pass
    return total


def pss_kib(pid):
    return rollup_kib(pid, "Pss")


def uss_kib(pid):
    return rollup_kib(pid, "Private_Clean", "Private_Dirty")


def start(kernel, mode, bins, socks):
    """Starts `kernel` cold (mode "cold") or from the zygote serving socks[mode]."""
    if mode == "cold":
        kernel.start_cold(bins + "/cellgate-jail")
    else:
        kernel.start_zygote(socks[mode])


def cpu_ms(pid):
    """CPU time of a whole process so far (ms): its process CPU clock (clock_getcpuclockid(3): every
    thread, live or exited, in nanoseconds). /proc/PID/schedstat counts the main thread alone, which
    left out the threads a kernel starts (heartbeat, iopub, control, history) and their faults; utime +
    stime are 10 ms ticks, as coarse as a forked start's whole CPU."""
    try:
        return time.clock_gettime(((~pid) << 3) | 2) * 1000  # MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
    except OSError:
        pass
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def minor_faults(pid):
    """Minor page faults of a process so far (copy-on-write among them); 0 for a process that is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[7])
    except (OSError, IndexError, ValueError):
        return 0


def vm_pte_kib(pid):
    """Page tables of a process (KiB, VmPTE): host memory that no smaps figure shows."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next((int(l.split()[1]) for l in f if l.startswith("VmPTE:")), 0)
    except OSError:
        return 0


def mappings(pid):
    try:
        with open(f"/proc/{pid}/maps") as f:
            return sum(1 for _ in f)
    except OSError:
        return 0


ROLES = ("helper", "init", "kernel")


def one_start(mode, bins, socks, ctx):
    """One start, counted per phase: {"wall": seconds to kernel_info_reply, "cpu": ms the jail's processes
    spent until then, "cpu_<role>", "minflt_<role>": each process's CPU and minor page faults until then
    (helper: the fork and its jail setup; init: its setup; kernel: adoption, i.e. everything until it
    answered), "minflt_exec"/"cpu_exec": the kernel's first execute (`1+1`, first reply)}."""
    k = Kernel()
    t0 = time.monotonic()
    start(k, mode, bins, socks)
    ok = k.kernel_info(ctx, t0 + 30)
    elapsed = time.monotonic() - t0
    k.wait_ready_line()
    out = {"wall": elapsed}
    for role, pid in zip(ROLES, k.pids()):
        out[f"cpu_{role}"] = cpu_ms(pid)
        out[f"minflt_{role}"] = minor_faults(pid)
    out["cpu"] = sum(out[f"cpu_{r}"] for r in ROLES)
    kernel = k.pids()[2]
    executed = ok and k.execute(ctx, "1+1", time.monotonic() + 30)
    out["minflt_exec"] = minor_faults(kernel) - out["minflt_kernel"]
    out["cpu_exec"] = cpu_ms(kernel) - out["cpu_kernel"]
    k.stop()
    if not ok or not executed:
        raise RuntimeError(f"{mode}: no kernel_info_reply or execute_reply within 30 s")
    return out


def parallel(mode, n, bins, socks, ctx, extra=()):
    kernels = [Kernel() for _ in range(n)]
    for k in kernels:
        k.extra = list(extra)
    done = [None] * n
    t0 = time.monotonic()

    def run(i):
        start(kernels[i], mode, bins, socks)
        if kernels[i].kernel_info(ctx, t0 + 60):
            done[i] = time.monotonic() - t0

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in kernels:
        k.wait_ready_line()
    if None in done:
        raise RuntimeError(f"{mode}: {done.count(None)} of {n} kernels did not answer")
    return max(done), kernels


def gateway_starts(bins, fork_server, runs):
    """POST /api/kernels -> 201 (the gateway answers once the kernel answered kernel_info) on a real
    `cellgate serve --spawner jail --fork-server on|off`; returns the wall times in seconds."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "integration"))
    import targets as tm
    t = tm.CellgateTarget(os.path.join(bins, "cellgate"), spawner="jail", extra_args=["--fork-server", fork_server])
    t.start()
    try:
        if fork_server == "on":
            deadline = time.monotonic() + 60
            while not os.path.exists(os.path.join(t.run_dir, "zygote.sock")) and time.monotonic() < deadline:
                time.sleep(0.05)
        kid = t.start_kernel()["id"]  # warm-up
        t.delete_kernel(kid)
        out = []
        for _ in range(runs):
            t0 = time.monotonic()
            kid = t.start_kernel()["id"]
            out.append(time.monotonic() - t0)
            t.delete_kernel(kid)
        return out
    finally:
        t.stop()


def start_zygote(bins, sock, args=()):
    # A zygote that was killed leaves its socket file behind; waiting for the path to exist would then return
    # before the new one binds (ECONNREFUSED in CI). Remove it, and call the zygote up when a connect succeeds.
    try:
        os.unlink(sock)
    except FileNotFoundError:
        pass
    log = open(f"{RUN}/zygote-bench.log", "ab")
    proc = subprocess.Popen([bins + "/cellgate-zygote", "--socket", sock, *args], stdin=subprocess.DEVNULL, stdout=log,
                            stderr=log, start_new_session=True, env={"PATH": "/usr/bin:/bin"})
    t0 = time.monotonic()
    while not accepts(sock):
        if proc.poll() is not None or time.monotonic() - t0 > 60:
            raise RuntimeError(f"the zygote did not start (see {RUN}/zygote-bench.log)")
        time.sleep(0.02)
    return proc, time.monotonic() - t0


def accepts(sock_path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(sock_path)
        return True
    except (FileNotFoundError, ConnectionRefusedError):
        return False
    finally:
        s.close()


KSM = "/sys/kernel/mm/ksm"


def ksm_read(name):
    with open(f"{KSM}/{name}") as f:
        text = f.read().strip()
    return text[text.index("[") + 1:text.index("]")] if "[" in text else text


def ksm_write(name, value):
    with open(f"{KSM}/{name}", "w") as f:
        f.write(f"{value}\n")


def ksmd_cpu_ms():
    """CPU of the ksmd kernel thread so far (ms, /proc/PID/schedstat's run time): host CPU charged to no
    kernel's cgroup."""
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() != "ksmd":
                    continue
            with open(f"/proc/{pid}/schedstat") as f:
                return int(f.read().split()[0]) / 1e6
        except (OSError, ValueError):
            continue
    return 0.0


def start_batches(n, mode, bins, socks, ctx, extra, batch=20):
    """n idle kernels, started `batch` at a time (a start burst of hundreds is another figure)."""
    kernels = []
    for i in range(0, n, batch):
        _, ks = parallel(mode, min(batch, n - i), bins, socks, ctx, extra)
        kernels += ks
    return kernels


def per_kernel_mib(kernels):
    pids = [k.pids() for k in kernels]
    pss = statistics.mean(sum(pss_kib(p) for p in ps) for ps in pids) / 1024
    uss = statistics.mean(sum(uss_kib(p) for p in ps) for ps in pids) / 1024
    return pss, uss


def merge_phase(n, bins, socks, ctx, zygote_pid, settings, timeout_s):
    """n idle forked kernels with merging off, then n with --memory-merge on and ksmd running with
    `settings` (the KSM files the gateway's --kernel-memory-merge writes): PSS and USS per kernel for both,
    the seconds until ksmd had merged (pages_sharing within 1% of its value two full scans later), ksmd's
    CPU meanwhile and over 20 s after, and the zygote's huge pages before and after. Every KSM setting it
    changes is put back as found."""
    out = {}
    kernels = start_batches(n, "zygote", bins, socks, ctx, [])
    time.sleep(3)
    out["off_pss_mib"], out["off_uss_mib"] = per_kernel_mib(kernels)
    out["off_zygote_share_mib"] = pss_kib(zygote_pid) / 1024 / n
    for k in kernels:
        k.stop()
    saved = {name: ksm_read(name) for name in ["run", *settings]}
    huge_before = rollup_kib(zygote_pid, "AnonHugePages")
    try:
        kernels = start_batches(n, "zygote", bins, socks, ctx, ["--memory-merge", "on"])
        time.sleep(3)
        out["unmerged_pss_mib"], _ = per_kernel_mib(kernels)
        for name, value in settings.items():
            ksm_write(name, value)
        cpu0, scans0, t0 = ksmd_cpu_ms(), int(ksm_read("full_scans")), time.monotonic()
        ksm_write("run", 1)
        history = []  # (seconds, full_scans, pages_sharing)
        while time.monotonic() - t0 < timeout_s:
            time.sleep(1)
            history.append((time.monotonic() - t0, int(ksm_read("full_scans")) - scans0, int(ksm_read("pages_sharing"))))
            done = [h for h in history if h[1] >= 2 and h[1] + 2 <= history[-1][1]]
            if done and abs(history[-1][2] - done[-1][2]) <= 0.01 * max(1, history[-1][2]):
                break
        final = history[-1][2]
        out["merge_s"] = next(h[0] for h in history if h[2] >= 0.95 * final)
        out["merge_timed_out"] = time.monotonic() - t0 >= timeout_s
        wall = time.monotonic() - t0
        out["ksmd_cpu_merge_pct"] = (ksmd_cpu_ms() - cpu0) / 10 / wall
        out["merged_pss_mib"], out["merged_uss_mib"] = per_kernel_mib(kernels)
        # A kernel's page that still was the zygote's (shared since the fork) is merged too, into a KSM
        # copy: the zygote's original is then its own, and its PSS grows. Count it.
        out["merged_zygote_share_mib"] = pss_kib(zygote_pid) / 1024 / n
        out["pages_sharing"], out["pages_shared"] = final, int(ksm_read("pages_shared"))
        out["full_scans"] = history[-1][1]
        cpu1, t1 = ksmd_cpu_ms(), time.monotonic()
        time.sleep(30)
        out["ksmd_cpu_idle_pct"] = (ksmd_cpu_ms() - cpu1) / 10 / (time.monotonic() - t1)
        out["zygote_huge_before_mib"] = huge_before / 1024
        out["zygote_huge_after_mib"] = rollup_kib(zygote_pid, "AnonHugePages") / 1024
        out["pages_to_scan"] = int(ksm_read("pages_to_scan"))
        out["ksmd_cpu_total_s"] = (ksmd_cpu_ms() - cpu0) / 1000
    finally:
        ksm_write("run", saved["run"])
        for name, value in saved.items():
            if name != "run":
                ksm_write(name, value)
        for k in kernels:
            k.stop()
    return out


def print_merge(results, settings):
    print(f"kernel memory merging (KSM; ksmd with {' '.join(f'{k}={v}' for k, v in settings.items()) or 'its defaults'}; "
          "per idle forked kernel, helper+init+kernel):")
    print(f"{'kernels':>8} {'PSS off':>8} {'+zygote':>8} {'USS off':>8} {'PSS on':>8} {'+zygote':>8} {'USS on':>8} "
          f"{'merged in':>10} {'ksmd CPU':>9} {'then':>6} {'sharing':>9} {'shared':>8} {'zygote THP':>14} {'batch':>6}")
    for n, r in results.items():
        print(f"{n:>8} {r['off_pss_mib']:8.2f} {r['off_pss_mib'] + r['off_zygote_share_mib']:8.2f} {r['off_uss_mib']:8.2f} "
              f"{r['merged_pss_mib']:8.2f} {r['merged_pss_mib'] + r['merged_zygote_share_mib']:8.2f} {r['merged_uss_mib']:8.2f} "
              f"{r['merge_s']:9.0f}s{'!' if r['merge_timed_out'] else ' '} {r['ksmd_cpu_merge_pct']:8.1f}% "
              f"{r['ksmd_cpu_idle_pct']:5.1f}% {r['pages_sharing']:9d} {r['pages_shared']:8d} "
              f"{r['zygote_huge_before_mib']:6.0f}->{r['zygote_huge_after_mib']:<5.0f} {r['pages_to_scan']:6d}")
    print("(MiB; +zygote: with the fork server's PSS spread over the kernels; merged in: seconds from run=1 until "
          "pages_sharing reached 95% of its settled value, ! = timed out; ksmd CPU: % of one CPU meanwhile, then: "
          "over the next 30 s; zygote THP: its AnonHugePages, MiB; batch: pages_to_scan at the end)")


def figure_rows(n):
    """(figure, unit, key, target for the zygote, with cold); mode M's value is fig[f"{M}_{key}"]. The table
    and --jsonl share them. Fault counts are per process and phase: they do not depend on the machine's
    load, and they carry over to hosts where a fault costs far more (a PVM guest: issue 26)."""
    return [
        ("ipykernel start -> kernel_info_reply p50", "ms", "start_p50_ms", "<= 150", True),
        ("ipykernel start -> kernel_info_reply p90", "ms", "start_p90_ms", None, True),
        ("POST /api/kernels -> 201 via cellgate serve p50", "ms", "gateway_start_p50_ms", "<= 150", True),
        ("CPU of the jail's processes per start", "ms", "start_cpu_ms", "<= 0.1x cold_jail", True),
        ("CPU per start: helper (fork and jail setup)", "ms", "cpu_helper_ms", None, True),
        ("CPU per start: init (jail setup)", "ms", "cpu_init_ms", None, True),
        ("CPU per start: kernel until it answered (adoption)", "ms", "cpu_kernel_ms", None, True),
        ("CPU of the kernel's first execute (1+1)", "ms", "cpu_exec_ms", None, True),
        ("minor page faults per start: helper (fork and jail setup)", "faults", "minflt_helper", None, True),
        ("minor page faults per start: init (jail setup)", "faults", "minflt_init", None, True),
        ("minor page faults of the kernel until it answered", "faults", "start_minflt", None, True),
        ("minor page faults of the kernel's first execute (1+1)", "faults", "minflt_exec", None, True),
        (f"{n} ipykernels started in parallel, all ready", "s", "parallel_s", "<= 0.15x cold_jail", True),
        (f"PSS per idle ipykernel (helper+init+kernel, {n} alive)", "MiB", "pss_mib", "<= 0.2x cold_jail", True),
        (f"USS per idle ipykernel (helper+init+kernel, {n} alive)", "MiB", "uss_mib", None, True),
        (f"page tables per idle ipykernel (helper+init+kernel, {n} alive)", "KiB", "pte_kib", None, True),
        (f"mappings per idle ipykernel (helper+init+kernel, {n} alive)", "", "maps", None, True),
        (f"fork server PSS spread over {n} kernels", "MiB", "pss_share_mib", None, False),
        ("fork server CPU per request (its fork)", "ms", "fork_cpu_ms", None, False),
    ]


def print_jsonl(fig, n):
    for figure, unit, key, target, _ in figure_rows(n):
        for mode, backend in (("zygote", "cellgate"), ("cold", "cold_jail")):
            if f"{mode}_{key}" in fig:
                print(json.dumps({"figure": figure, "backend": backend, "value": fig[f"{mode}_{key}"], "unit": unit,
                                  "target": target if mode == "zygote" else None, "group": "fork server"}), flush=True)


def print_table(fig, a, kdirs, modes):
    heads = {"cold": "cold jail", "zygote": "zygote", "zygote_b": "zygote B"}
    cols = [m for m in ("cold", "zygote", "zygote_b") if m in modes]
    ratios = [(m, "cold") for m in ("zygote", "zygote_b") if m in cols and "cold" in cols]
    if "zygote_b" in cols:
        ratios.append(("zygote_b", "zygote"))
    print(f"{'figure':70}" + "".join(f" {heads[m]:>10}" for m in cols) +
          "".join(f" {(heads[x] + '/' + heads[y])[:16]:>16}" for x, y in ratios) + "  target")
    for label, unit, key, target, _ in figure_rows(a.parallel):
        if not any(f"{m}_{key}" in fig for m in cols):
            continue
        line = f"{label + (' (' + unit + ')' if unit else ''):70}"
        line += "".join(f" {fig[f'{m}_{key}']:10.3f}" if f"{m}_{key}" in fig else f" {'':10}" for m in cols)
        for x, y in ratios:
            vx, vy = fig.get(f"{x}_{key}"), fig.get(f"{y}_{key}")
            line += f" {vx / vy:16.3f}" if vx is not None and vy else f" {'':16}"
        print(line + f"  {target or ''}")
    for mode in cols:
        if f"{mode}_parallel_s_min" in fig:
            print(f"{heads[mode]}: {a.parallel} in parallel over {a.parallel_runs} batches: "
                  f"{fig[f'{mode}_parallel_s_min']:.3f}-{fig[f'{mode}_parallel_s_max']:.3f} s")
    if a.compare_args is not None or a.compare_bin is not None:
        print(f"zygote B: {a.compare_bin or a.bin}/cellgate-zygote {a.compare_args or ''} (starts and batches "
              "interleaved with zygote's)")
    print(f"zygote boot (preload) {fig['zygote_boot_s']:.2f} s; runs {a.runs}; load {fig['load_before']:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after; kernels' dirs on {kdirs}")
    print(f"host: {bench_run.machine_line()}")


def kernel_dirs_in_memory(kdir, mode):
    """What `cellgate serve` does for its default runtime dir (--ipc-tmpfs auto, memory_dir.h): the
    kernels' dirs on a tmpfs, mounted when the dir is on a disk and empty. Returns where they are."""
    os.makedirs(kdir, mode=mode, exist_ok=True)
    if subprocess.run(["stat", "-f", "-c", "%T", kdir], capture_output=True, text=True).stdout.strip() in ("tmpfs", "ramfs"):
        return "tmpfs"
    if os.listdir(kdir):
        return "disk (holds kernels' dirs)"
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"mode={mode:o},nosuid,nodev,noexec", "tmpfs", kdir], check=True)
    return "tmpfs"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", help="dir with cellgate-jail and cellgate-zygote")
    ap.add_argument("--cellgate", help="the cellgate binary (bench/run.py); its dir is --bin")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--parallel", type=int, default=20)
    ap.add_argument("--parallel-runs", type=int, default=3,
                    help="batches of --parallel kernels per mode; the figure is their median")
    ap.add_argument("--short", "--quick", dest="short", action="store_true", help="CI: 2 runs, 4 in parallel")
    ap.add_argument("--jsonl", action="store_true", help="JSON lines for bench/run.py instead of the table")
    ap.add_argument("--zygote-only", action="store_true", help="no cold starts, no gateway: the zygote's figures only")
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--compare-args", metavar="ARGS",
                    help="A/B: a second zygote started with these extra arguments (e.g. '--shed-image off'), its "
                         "starts and batches interleaved with the first's (column 'zygote B')")
    ap.add_argument("--compare-bin", metavar="DIR",
                    help="A/B: a second zygote from DIR/cellgate-zygote (another build), interleaved as above")
    ap.add_argument("--memory-merge", metavar="N[,N...]",
                    help="also: N idle forked kernels without and then with --memory-merge on and ksmd running "
                         "(needs KSM; every KSM setting is put back after), for each N")
    ap.add_argument("--ksm", metavar="NAME=VALUE[,...]", default="advisor_mode=none,pages_to_scan=100,sleep_millisecs=20",
                    help="ksmd's settings for --memory-merge, in order (files of /sys/kernel/mm/ksm; default: what "
                         "cellgate serve --kernel-memory-merge on writes, 5000 pages a second)")
    ap.add_argument("--merge-timeout", type=int, default=600, help="longest wait for ksmd to settle, seconds")
    a = ap.parse_args()
    if a.bin is None and a.cellgate:
        a.bin = os.path.dirname(os.path.abspath(a.cellgate))
    if a.bin is None:
        ap.error("--bin or --cellgate is required")
    if a.short:
        a.runs, a.parallel, a.parallel_runs = 2, 4, 1
    if a.parallel_runs < 1:
        ap.error("--parallel-runs must be at least 1")
    if os.geteuid() != 0:
        print("zygote_bench: needs root (it builds jails)", file=sys.stderr)
        return 4
    kdirs = ", ".join(sorted({kernel_dirs_in_memory(f"{RUN}/k", 0o711), kernel_dirs_in_memory(f"{RUN}/s", 0o700)}))
    socks = {"zygote": f"{RUN}/zygote-bench.sock"}
    fig = {"load_before": os.getloadavg()[0]}
    zygotes = {}
    merged = {}
    ksm_settings = dict(kv.split("=", 1) for kv in a.ksm.split(",") if kv)
    if a.memory_merge and not os.path.exists(f"{KSM}/run"):
        print("zygote_bench: --memory-merge: this kernel has no KSM", file=sys.stderr)
        return 4
    modes = ("zygote",) if a.zygote_only else ("cold", "zygote")
    ctx = zmq.Context()
    try:
        zygotes["zygote"], fig["zygote_boot_s"] = start_zygote(a.bin, socks["zygote"])
        if a.compare_args is not None or a.compare_bin is not None:
            socks["zygote_b"] = f"{RUN}/zygote-bench-b.sock"
            zygotes["zygote_b"], _ = start_zygote(a.compare_bin or a.bin, socks["zygote_b"], (a.compare_args or "").split())
            modes += ("zygote_b",)
        for mode in modes:
            one_start(mode, a.bin, socks, ctx)  # warm the page cache and the seccomp cache
        starts = {m: [] for m in modes}
        zygote_cpu = {m: 0.0 for m in zygotes}
        for _ in range(a.runs):
            for mode in modes:  # interleaved: every mode sees the same load
                before = cpu_ms(zygotes[mode].pid) if mode in zygotes else 0.0
                starts[mode].append(one_start(mode, a.bin, socks, ctx))
                if mode in zygotes:
                    zygote_cpu[mode] += cpu_ms(zygotes[mode].pid) - before
        for mode in modes:
            runs = starts[mode]
            if mode in zygotes:
                fig[f"{mode}_fork_cpu_ms"] = zygote_cpu[mode] / a.runs
            fig[f"{mode}_start_cpu_ms"] = statistics.median(r["cpu"] for r in runs)
            fig[f"{mode}_start_minflt"] = statistics.median(r["minflt_kernel"] for r in runs)
            for key in ("cpu_helper", "cpu_init", "cpu_kernel", "cpu_exec"):
                fig[f"{mode}_{key}_ms"] = statistics.median(r[key] for r in runs)
            for key in ("minflt_helper", "minflt_init", "minflt_exec"):
                fig[f"{mode}_{key}"] = statistics.median(r[key] for r in runs)
            t = sorted(r["wall"] for r in runs)
            fig[f"{mode}_start_p50_ms"] = statistics.median(t) * 1000
            fig[f"{mode}_start_p90_ms"] = t[min(len(t) - 1, int(len(t) * 0.9))] * 1000
        walls = {m: [] for m in modes}
        for run in range(a.parallel_runs):
            for mode in modes:
                wall, kernels = parallel(mode, a.parallel, a.bin, socks, ctx)
                walls[mode].append(wall)
                if run == a.parallel_runs - 1:
                    time.sleep(2)  # idle: the kernels have answered and settled
                    pids = [k.pids() for k in kernels]
                    fig[f"{mode}_pss_mib"] = statistics.mean(sum(pss_kib(p) for p in ps) for ps in pids) / 1024
                    fig[f"{mode}_uss_mib"] = statistics.mean(sum(uss_kib(p) for p in ps) for ps in pids) / 1024
                    fig[f"{mode}_pte_kib"] = statistics.mean(sum(vm_pte_kib(p) for p in ps) for ps in pids)
                    fig[f"{mode}_maps"] = statistics.mean(sum(mappings(p) for p in ps) for ps in pids)
                    if mode in zygotes:
                        fig[f"{mode}_pss_share_mib"] = pss_kib(zygotes[mode].pid) / 1024 / a.parallel
                for k in kernels:
                    k.stop()
                time.sleep(1)
        for mode in modes:
            fig[f"{mode}_parallel_s"] = statistics.median(walls[mode])
            fig[f"{mode}_parallel_s_min"], fig[f"{mode}_parallel_s_max"] = min(walls[mode]), max(walls[mode])
        if a.memory_merge:
            for n in (int(x) for x in a.memory_merge.split(",")):
                merged[n] = merge_phase(n, a.bin, socks, ctx, zygotes["zygote"].pid, ksm_settings, a.merge_timeout)
                for key, value in merged[n].items():
                    fig[f"merge{n}_{key}"] = float(value)
    finally:
        for z in zygotes.values():
            z.terminate()
            z.wait(timeout=10)
        ctx.term()
    if os.path.exists(os.path.join(a.bin, "cellgate")) and not a.zygote_only:
        fig["cold_gateway_start_p50_ms"] = statistics.median(gateway_starts(a.bin, "off", a.runs)) * 1000
        fig["zygote_gateway_start_p50_ms"] = statistics.median(gateway_starts(a.bin, "on", a.runs)) * 1000
    if a.jsonl:
        print_jsonl(fig, a.parallel)
    else:
        print_table(fig, a, kdirs, modes)
        if merged:
            print_merge(merged, ksm_settings)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(fig, f, indent=1)
    bad = [k for k, v in fig.items() if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0)]
    bad += [k for k in ("cold_start_p50_ms", "zygote_start_p50_ms", "cold_pss_mib", "zygote_pss_mib")
            if (k in fig or not a.zygote_only) and not fig.get(k, 0) > 0]
    if bad:
        print(f"zygote_bench: malformed figures: {bad}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
