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
  - parallel: N kernels requested at once -> the last kernel_info_reply (the median of --parallel-runs
    batches: one batch moves by ~15% between runs on this 2-core VM);
  - CPU per start: what the jail's processes (helper, init, kernel) spent until the reply, a figure the
    machine's load does not inflate (wall times do: the load average is printed);
  - PSS of an idle kernel: the sum of Pss over its jail's processes with the parallel batch alive, and
    the zygote's own PSS spread over that batch; USS: their private memory, what one more kernel costs.
Targets (issue 8): start <= 150 ms, 20 in parallel <= 0.5 s, <= 20 MiB PSS per idle kernel.

usage: zygote_bench.py --bin BUILD/bin [--runs N] [--parallel N] [--parallel-runs N] [--short] [--zygote-only]
                      [--json FILE]
       zygote_bench.py --jsonl --cellgate BUILD/bin/cellgate [--quick]     (for bench/run.py)
--jsonl prints one JSON line per figure instead of the table: the fork server as backend "cellgate"
(with the issue's targets), cold jailed starts as the reference backend "cold_jail"; group "fork server".
--zygote-only skips the cold starts and the gateway (a lighter run to compare two zygotes).
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
        self.helper = None
        self.popen = None
        self.pidfd = None
        self.ready = None
        self.status = None

    def jail_args(self, ready_fd=3):
        args = ["--name", self.kid, "--bind-same", self.runtime, "--status-file", self.private + "/jail.json",
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

    def kernel_info(self, ctx, deadline):
        """Sends kernel_info_request at once (ZeroMQ queues it until the kernel binds); returns at the reply."""
        session = Session(key=self.info["key"].encode(), signature_scheme=self.info["signature_scheme"])
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.RECONNECT_IVL, 5)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(f"ipc://{self.info['ip']}-{self.info['shell_port']}")
        session.send(sock, "kernel_info_request", {})
        try:
            while time.monotonic() < deadline:
                if sock.poll(int(max(1, (deadline - time.monotonic()) * 1000))):
                    _, msg = session.recv(sock)
                    if msg and msg["msg_type"] == "kernel_info_reply":
                        return True
            return False
        finally:
            sock.close()

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


def start(kernel, mode, bins, sock):
    if mode == "zygote":
        kernel.start_zygote(sock)
    else:
        kernel.start_cold(bins + "/cellgate-jail")


def cpu_ms(pid):
    """CPU time of a process so far (ms): schedstat's nanoseconds on CPU (utime + stime in clock ticks
    is 10 ms coarse, as big as a forked start's whole CPU)."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[0]) / 1e6
    except (OSError, IndexError, ValueError):
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


def one_start(mode, bins, sock, ctx):
    """(wall seconds to kernel_info_reply, CPU ms its jail's processes spent until then, the kernel's minor
    page faults until then)."""
    k = Kernel()
    t0 = time.monotonic()
    start(k, mode, bins, sock)
    ok = k.kernel_info(ctx, t0 + 30)
    elapsed = time.monotonic() - t0
    k.wait_ready_line()
    cpu = sum(cpu_ms(p) for p in k.pids())
    faults = minor_faults(k.pids()[2])
    k.stop()
    if not ok:
        raise RuntimeError(f"{mode}: no kernel_info_reply within 30 s")
    return elapsed, cpu, faults


def parallel(mode, n, bins, sock, ctx):
    kernels = [Kernel() for _ in range(n)]
    done = [None] * n
    t0 = time.monotonic()

    def run(i):
        start(kernels[i], mode, bins, sock)
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


def start_zygote(bins, sock):
    # A zygote that was killed leaves its socket file behind; waiting for the path to exist would then return
    # before the new one binds (ECONNREFUSED in CI). Remove it, and call the zygote up when a connect succeeds.
    try:
        os.unlink(sock)
    except FileNotFoundError:
        pass
    log = open(f"{RUN}/zygote-bench.log", "ab")
    proc = subprocess.Popen([bins + "/cellgate-zygote", "--socket", sock], stdin=subprocess.DEVNULL, stdout=log,
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


def figure_rows(n):
    """(figure, unit, cold key, zygote key, target for the zygote); the table and --jsonl share them."""
    return [
        ("ipykernel start -> kernel_info_reply p50", "ms", "cold_start_p50_ms", "zygote_start_p50_ms", "<= 150"),
        ("ipykernel start -> kernel_info_reply p90", "ms", "cold_start_p90_ms", "zygote_start_p90_ms", None),
        ("POST /api/kernels -> 201 via cellgate serve p50", "ms", "gateway_cold_start_p50_ms",
         "gateway_zygote_start_p50_ms", "<= 150"),
        ("CPU of the jail's processes per start", "ms", "cold_start_cpu_ms", "zygote_start_cpu_ms", None),
        ("minor page faults of the kernel until it answered", "faults", "cold_start_minflt", "zygote_start_minflt", None),
        (f"{n} ipykernels started in parallel, all ready", "s", "cold_parallel_s", "zygote_parallel_s", "<= 0.5"),
        (f"PSS per idle ipykernel (helper+init+kernel, {n} alive)", "MiB", "cold_pss_mib", "zygote_pss_mib", "<= 20"),
        (f"USS per idle ipykernel (helper+init+kernel, {n} alive)", "MiB", "cold_uss_mib", "zygote_uss_mib", None),
        (f"fork server PSS spread over {n} kernels", "MiB", None, "zygote_pss_share_mib", None),
        ("fork server CPU per request (its fork)", "ms", None, "zygote_fork_cpu_ms", None),
    ]


def print_jsonl(fig, n):
    for figure, unit, cold, zyg, target in figure_rows(n):
        if zyg not in fig:
            continue
        print(json.dumps({"figure": figure, "backend": "cellgate", "value": fig[zyg], "unit": unit,
                          "target": target, "group": "fork server"}), flush=True)
        if cold is not None and cold in fig:
            print(json.dumps({"figure": figure, "backend": "cold_jail", "value": fig[cold], "unit": unit,
                              "target": None, "group": "fork server"}), flush=True)


def print_table(fig, a, kdirs):
    print(f"{'figure':62} {'cold jail':>10} {'zygote':>10} {'ratio':>7}  target")
    for label, unit, c, z, target in figure_rows(a.parallel):
        if z not in fig:
            continue
        label = f"{label} ({unit})"
        if c is None or c not in fig:
            print(f"{label:62} {'':10} {fig[z]:10.3f}")
        else:
            print(f"{label:62} {fig[c]:10.3f} {fig[z]:10.3f} {fig[z] / fig[c]:7.2f}  {target or ''}")
    for mode in ("cold", "zygote"):
        if f"{mode}_parallel_s_min" in fig:
            print(f"{mode}: {a.parallel} in parallel over {a.parallel_runs} batches: "
                  f"{fig[f'{mode}_parallel_s_min']:.3f}-{fig[f'{mode}_parallel_s_max']:.3f} s")
    print(f"zygote boot (preload) {fig['zygote_boot_s']:.2f} s; runs {a.runs}; load {os.getloadavg()[0]:.2f}; "
          f"cpus {os.cpu_count()}; kernels' dirs on {kdirs}")


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
    sock = f"{RUN}/zygote-bench.sock"
    zygote, boot = start_zygote(a.bin, sock)
    ctx = zmq.Context()
    fig = {"zygote_boot_s": boot}
    modes = ("zygote",) if a.zygote_only else ("cold", "zygote")
    try:
        for mode in modes:
            one_start(mode, a.bin, sock, ctx)  # warm the page cache and the seccomp cache
        times = {m: [] for m in modes}
        cpus = {m: [] for m in modes}
        faults = {m: [] for m in modes}
        zygote_cpu0 = cpu_ms(zygote.pid)
        for _ in range(a.runs):
            for mode in modes:
                wall, cpu, flt = one_start(mode, a.bin, sock, ctx)
                times[mode].append(wall)
                cpus[mode].append(cpu)
                faults[mode].append(flt)
        fig["zygote_fork_cpu_ms"] = (cpu_ms(zygote.pid) - zygote_cpu0) / a.runs
        for mode in modes:
            fig[f"{mode}_start_cpu_ms"] = statistics.median(cpus[mode])
            fig[f"{mode}_start_minflt"] = statistics.median(faults[mode])
            t = sorted(times[mode])
            fig[f"{mode}_start_p50_ms"] = statistics.median(t) * 1000
            fig[f"{mode}_start_p90_ms"] = t[min(len(t) - 1, int(len(t) * 0.9))] * 1000
            walls = []
            for run in range(a.parallel_runs):
                if run:
                    for k in kernels:
                        k.stop()
                    time.sleep(1)
                wall, kernels = parallel(mode, a.parallel, a.bin, sock, ctx)
                walls.append(wall)
            fig[f"{mode}_parallel_s"] = statistics.median(walls)
            fig[f"{mode}_parallel_s_min"], fig[f"{mode}_parallel_s_max"] = min(walls), max(walls)
            time.sleep(2)  # idle: the kernels have answered and settled
            per_kernel = [sum(pss_kib(p) for p in k.pids()) for k in kernels]
            fig[f"{mode}_pss_mib"] = statistics.mean(per_kernel) / 1024
            fig[f"{mode}_uss_mib"] = statistics.mean(sum(uss_kib(p) for p in k.pids()) for k in kernels) / 1024
            if mode == "zygote":
                fig["zygote_pss_share_mib"] = pss_kib(zygote.pid) / 1024 / a.parallel
            for k in kernels:
                k.stop()
    finally:
        zygote.terminate()
        zygote.wait(timeout=10)
        ctx.term()
    if os.path.exists(os.path.join(a.bin, "cellgate")) and not a.zygote_only:
        fig["gateway_cold_start_p50_ms"] = statistics.median(gateway_starts(a.bin, "off", a.runs)) * 1000
        fig["gateway_zygote_start_p50_ms"] = statistics.median(gateway_starts(a.bin, "on", a.runs)) * 1000
    if a.jsonl:
        print_jsonl(fig, a.parallel)
    else:
        print_table(fig, a, kdirs)
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
