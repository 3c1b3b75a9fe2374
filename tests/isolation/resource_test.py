# SPDX-License-Identifier: BSD-3-Clause
# resource_test: limits (pids, memory, /tmp, fds, cpu), lifecycle signals (SIGUSR1, SIGKILL, SIGINT,
# zombie reaping) and functional checks of the real cellgate-jail. Each asserts the limit held,
# the host is fine afterwards, and nothing is left behind. --no-jail runs bare: each must FAIL.
import glob
import os
import secrets
import signal
import subprocess
import time

import harness
from harness import HELD, Run, check, drain, expect_clean, log, read_until, run_probe

PY = "/usr/bin/python3"


def host_is_fine():
    """The host still forks, allocates and has free /tmp after an abuse test."""
    check(os.system("/usr/bin/true") == 0, "host can still fork and exec")
    block = bytearray(64 << 20)
    check(len(block) == 64 << 20, "host can still allocate 64 MiB")


def final_status(run, grace=10):
    deadline = time.monotonic() + grace
    st = run.status()
    while st.get("state") != "exited" and time.monotonic() < deadline:
        time.sleep(0.1)
        st = run.status()
    log(f"status: {st}")
    return st


def case_fork_bomb(ctx):
    rc, out, run = run_probe(ctx, ["/probes/fork_bomb", "300", "exit"], [], opts=["--pids", "64"])
    check(rc == HELD, f"fork bomb stopped by EAGAIN below 300 forks (exit {rc})")
    st = final_status(run)
    check("pids" in str(st.get("reason", "")), f"status reason mentions pids: {st.get('reason')!r}")
    host_is_fine()


def case_fork_bomb_killable(ctx):
    run = Run(ctx, ["/probes/fork_bomb", "300", "hold"], opts=["--pids", "64"], pipe=True, tag="bombhold")
    text = read_until(run, "holding", timeout=90)
    check("held: fork stopped" in text, "fork bomb hit the pids limit")
    check("holding" in text, "the bomb holds its processes")
    t0 = time.monotonic()
    run.kill()
    rc = run.wait(60)
    drain(run)
    log(f"helper exit {rc} after {time.monotonic() - t0:.2f}s")
    check(rc is not None, "the jail with a fork bomb in it was killed")
    expect_clean(run)
    host_is_fine()


def case_fork_bomb_churning(ctx):
    """A classic `while (1) fork();` bomb, busy at the pids limit, is still killed at once by SIGUSR1."""
    if ctx.nojail:
        raise harness.Skip("a classic fork bomb is never run bare (nothing would hold it)")
    run = Run(ctx, ["/probes/fork_bomb", "1", "classic"], opts=["--pids", "64", "--cpu", "1"], pipe=True, tag="churn")
    check("bombing" in read_until(run, "bombing", timeout=60), "the bomb started")
    time.sleep(2)
    run.kill()
    rc = run.wait(60)
    drain(run)
    check(rc is not None, f"the jail with a churning fork bomb was killed (helper exit {rc})")
    st = final_status(run)
    check(st.get("state") == "exited", f"final status written: {st}")
    expect_clean(run)
    host_is_fine()


def case_memory_bomb(ctx):
    rc, out, run = run_probe(ctx, ["/probes/memory_bomb", "512"], [], opts=["--memory", "128M"])
    check(rc == 128 + signal.SIGKILL, f"memory bomb killed: helper exit {rc} (want 137)")
    st = final_status(run)
    check(st.get("state") == "exited", "status state exited")
    check("memory" in str(st.get("reason", "")), f"status reason mentions the memory limit: {st.get('reason')!r}")
    check(st.get("signal") == signal.SIGKILL, f"status signal 9: {st.get('signal')}")
    host_is_fine()


def case_tmp_fill(ctx):
    for d in ("/tmp", "/dev/shm"):
        rc, out, run = run_probe(ctx, ["/probes/tmp_fill", d, "64"], [], opts=["--tmp-size", "16M"])
        check(rc == HELD, f"{d} filled to ENOSPC below 64 MiB (exit {rc})")
    host_is_fine()


def case_fsize(ctx):
    for vname, variant in ctx.variants().items():
        rc, out, run = run_probe(ctx, ["/probes/tmp_fill", "/workspace" if not ctx.nojail else "/tmp", "64", "EFBIG"],
                                 variant, opts=["--fsize", "8M"])
        check(rc == HELD, f"[{vname}] a file in /workspace stopped by EFBIG below 64 MiB (exit {rc})")


def case_nofile(ctx):
    rc, out, run = run_probe(ctx, ["/probes/fd_exhaust", "64"], [], opts=["--nofile", "64"])
    check(rc == HELD, f"fd exhaustion stopped by EMFILE below 64 (exit {rc})")


def cgroup_cpu_usage_ns(name):
    """CPU time the jail's cgroup has used (v1 cpuacct.usage, or v2 cpu.stat usage_usec)."""
    for path in glob.glob(f"{harness.CGROUP_BASE}/cpuacct*/cellgate/{name}/cpuacct.usage") + \
            glob.glob(f"{harness.CGROUP_BASE}/cpu,cpuacct/cellgate/{name}/cpuacct.usage"):
        with open(path) as f:
            return int(f.read())
    for path in glob.glob(f"{harness.CGROUP_BASE}/cellgate/{name}/cpu.stat") + \
            glob.glob(f"{harness.CGROUP_BASE}/unified/cellgate/{name}/cpu.stat"):
        with open(path) as f:
            for line in f:
                if line.startswith("usage_usec"):
                    return int(line.split()[1]) * 1000
    return None


def cgroup_cpu_quota(name):
    for d in glob.glob(f"{harness.CGROUP_BASE}/cpu*/cellgate/{name}"):
        try:
            with open(f"{d}/cpu.cfs_quota_us") as f:
                quota = int(f.read())
            with open(f"{d}/cpu.cfs_period_us") as f:
                period = int(f.read())
            return quota / period
        except OSError:
            pass
    for d in glob.glob(f"{harness.CGROUP_BASE}/cellgate/{name}"):
        with open(f"{d}/cpu.max") as f:
            q, p = f.read().split()
            return None if q == "max" else int(q) / int(p)
    return None


def read_int(path):
    with open(path) as f:
        return int(f.read().split()[0])


def no_swap_accounting(limit_file):
    """Without swap accounting (CONFIG_SWAP=n, or swapaccount=0) the jail has no swap limit to set:
    that is only sound when the host has no swap, or a kernel could swap past its memory limit."""
    with open("/proc/swaps") as f:
        active = f.read().splitlines()[1:]
    check(not active, f"no {limit_file} here (no swap accounting), and no swap a kernel could spill into "
                      f"({len(active)} active swap areas)")


def case_cgroup_config(ctx):
    """The limits asked for are the ones in the cgroups (memory without swap, pids, cpu), and every
    jail process - init, kernel, its children - sits in the jail's cgroup in each hierarchy."""
    code = "import subprocess, time; p = subprocess.Popen(['sleep', '60']); print('up', flush=True); time.sleep(60)"
    run = Run(ctx, [PY, "-c", code], opts=["--memory", "200M", "--pids", "77", "--cpu", "0.25"], pipe=True, tag="cgcfg")
    check("up" in read_until(run, "up", timeout=60), "jailed python and its child are up")
    try:
        dirs = harness.cgroup_dirs(run.name)
        log("cgroup dirs: " + " ".join(dirs))
        check(len(dirs) > 0, "the jail has cgroup dirs")
        by = {d.split("/")[4] if d.count("/") > 5 else "v2": d for d in dirs}
        if "memory" in by:
            check(read_int(f"{by['memory']}/memory.limit_in_bytes") == 200 << 20, "memory.limit_in_bytes = 200M")
            memsw = f"{by['memory']}/memory.memsw.limit_in_bytes"
            if os.path.exists(memsw):
                check(read_int(memsw) == 200 << 20, "memory.memsw.limit_in_bytes = 200M (no swap on top)")
            else:
                no_swap_accounting("memory.memsw.limit_in_bytes")
        else:
            check(os.path.exists(f"{by['v2']}/memory.max"), "a memory controller is in use")
            with open(f"{by['v2']}/memory.max") as f:
                check(f.read().strip() == str(200 << 20), "memory.max = 200M")
            swap = f"{by['v2']}/memory.swap.max"
            if os.path.exists(swap):
                with open(swap) as f:
                    check(f.read().strip() == "0", "memory.swap.max = 0")
            else:
                no_swap_accounting("memory.swap.max")
        pids_dir = by.get("pids", by.get("v2"))
        with open(f"{pids_dir}/pids.max") as f:
            check(f.read().strip() == "77", "pids.max = 77")
        check(cgroup_cpu_quota(run.name) == 0.25, f"cpu quota 0.25 ({cgroup_cpu_quota(run.name)})")
        ready = run.ready or {}
        init = ready.get("init_pid")
        members = []
        for d in dirs:
            with open(f"{d}/cgroup.procs") as f:
                members.append(set(int(x) for x in f.read().split()))
        jail_pids = [p for p in map(int, filter(str.isdigit, os.listdir("/proc")))
                     if harness.pid_alive(p) and parent_chain_has(p, init)]
        log(f"jail processes seen from the host: {jail_pids}")
        check(len(jail_pids) >= 3, "init, the kernel and its child are visible from the host")
        for d, procs in zip(dirs, members):
            missing = [p for p in jail_pids if p not in procs]
            check(not missing, f"every jail process is in {d} (missing {missing})")
    finally:
        run.kill()
        run.wait(60)
        drain(run)
    expect_clean(run)


def parent_chain_has(pid, ancestor):
    for _ in range(64):
        if pid == ancestor:
            return True
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
        if pid <= 1:
            return False
    return False


def case_cpu_throttle(ctx):
    # A behaviour check with a generous margin (0.5 core asked, < 0.7 accepted), not a speed test.
    run = Run(ctx, ["/probes/cpu_spin", "8", "2"], opts=["--cpu", "0.5"], pipe=True, tag="cpu")
    time.sleep(2)
    quota = cgroup_cpu_quota(run.name)
    log(f"cgroup cpu quota: {quota} cores")
    u1, t1 = cgroup_cpu_usage_ns(run.name), time.monotonic()
    time.sleep(3)
    u2, t2 = cgroup_cpu_usage_ns(run.name), time.monotonic()
    text = read_until(run, "cores=", timeout=60)
    rc = run.wait(60)
    drain(run)
    check(rc == 0, f"cpu_spin exited 0 ({rc})")
    check(quota is not None and abs(quota - 0.5) < 0.01, f"cgroup quota is 0.5 core ({quota})")
    check(u1 is not None and u2 is not None, "cgroup cpu usage readable while running")
    cg_cores = (u2 - u1) / 1e9 / (t2 - t1)
    log(f"cgroup usage over {t2 - t1:.2f}s: {cg_cores:.3f} cores")
    check(cg_cores < 0.7, f"cgroup cpu usage {cg_cores:.3f} < 0.7 core")
    probe_cores = float(text.split("cores=")[1].split()[0])
    check(probe_cores < 0.7, f"the spinner itself got {probe_cores:.3f} < 0.7 core")
    expect_clean(run)


def start_daemon_jail(ctx, tag, then_exit=False):
    prefix = f"cellgate-{secrets.token_hex(6)}"
    marker = prefix + "-daemon"

    def kill_markers():
        for pid in harness.processes_with_marker(marker):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    ctx.cleanups.append(kill_markers)
    run = Run(ctx, [PY, "/pyprobes/daemonize.py", "/probes/sleeper", prefix] + (["exit"] if then_exit else []),
              pipe=True, tag=tag)
    text = read_until(run, "ready", timeout=60)
    check("ready daemon=" in text, "the jailed process left a daemon (setsid + double fork)")
    daemons = harness.processes_with_marker(marker)
    check(len(daemons) >= 1, f"daemon visible from the host: {daemons}")
    return run, marker


def wait_gone(marker, timeout=15):
    deadline = time.monotonic() + timeout
    left = harness.processes_with_marker(marker)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = [p for p in harness.processes_with_marker(marker) if harness.pid_alive(p)]
    return left


def case_sigusr1_kills_all(ctx):
    run, marker = start_daemon_jail(ctx, "usr1")
    run.proc.send_signal(signal.SIGUSR1)
    rc = run.wait(60)
    drain(run)
    log(f"helper exit {rc}")
    left = wait_gone(marker)
    check(not left, f"daemonised grandchild killed with the jail ({left})")
    st = final_status(run)
    check(st.get("state") == "exited", f"final status written ({st.get('state')})")
    expect_clean(run)


def case_command_exit_ends_jail(ctx):
    """When the jail's command exits, the jail ends with it: a daemon it left is killed, the helper
    exits with the command's code and cleans up."""
    run, marker = start_daemon_jail(ctx, "cmdexit", then_exit=True)
    run.proc.stdin.write(b"exit\n")
    run.proc.stdin.flush()
    rc = run.wait(60)
    drain(run)
    check(rc == 0, f"helper exited with the command's code 0 ({rc})")
    left = wait_gone(marker)
    check(not left, f"the daemon left behind by the command died with the jail ({left})")
    st = final_status(run)
    check(st.get("state") == "exited" and st.get("exit_code") == 0, f"final status exited 0: {st}")
    expect_clean(run)


def case_sigkill_helper(ctx):
    run, marker = start_daemon_jail(ctx, "kill9")
    run.proc.send_signal(signal.SIGKILL)
    run.wait(60)
    drain(run)
    left = wait_gone(marker)
    check(not left, f"SIGKILL of the helper killed the jail, daemon included ({left})")
    init = (run.ready or {}).get("init_pid")
    if isinstance(init, int):
        deadline = time.monotonic() + 15
        while harness.pid_alive(init) and time.monotonic() < deadline:
            time.sleep(0.1)
        check(not harness.pid_alive(init), f"jail init {init} is gone")
    # The helper had no chance to remove its cgroups; the launcher sweeps them. Do it here.
    for cg in harness.cgroup_dirs(run.name):
        log(f"removing cgroup left by the killed helper: {cg}")
        harness.remove_cgroup(cg)
    expect_clean(run)


def case_sigint_interrupts(ctx):
    run = Run(ctx, [PY, "/pyprobes/sigint_probe.py"], pipe=True, tag="sigint")
    text = read_until(run, "ready", timeout=60)
    check("ready" in text, "sleeping python is up")
    run.proc.send_signal(signal.SIGINT)
    text = read_until(run, "still alive", timeout=60)
    rc = run.wait(60)
    drain(run)
    check("interrupted: KeyboardInterrupt" in text, "SIGINT raised KeyboardInterrupt in the jailed python")
    check("still alive" in text and rc == 0, f"the python survived the interrupt and exited 0 ({rc})")
    expect_clean(run)


def functional(ctx, script, ok_line, variants=None):
    for vname, variant in (variants or ctx.variants()).items():
        log(f"--- variant {vname}")
        rc, out, run = run_probe(ctx, [PY, f"/pyprobes/{script}"], variant, timeout=300)
        check(rc == 0 and ok_line in out, f"[{vname}] {script} passed (exit {rc})")


def case_sigterm_graceful(ctx):
    run = Run(ctx, [PY, "/pyprobes/sigterm_probe.py"], pipe=True, tag="sigterm")
    text = read_until(run, "ready", timeout=60)
    check("ready" in text, "jailed python with a SIGTERM handler is up")
    run.proc.send_signal(signal.SIGTERM)
    text = read_until(run, "shutting down", timeout=60)
    rc = run.wait(60)
    drain(run)
    check("got SIGTERM" in text, "SIGTERM to the helper reached the kernel's handler")
    check(rc == 0, f"the helper exited with the kernel's code 0 ({rc})")
    st = final_status(run)
    check(st.get("state") == "exited" and st.get("exit_code") == 0, f"final status exited 0: {st}")
    expect_clean(run)


def case_init_reaps_zombies(ctx):
    functional(ctx, "zombie_probe.py", "zombies: []")


def case_datascience(ctx):
    variants = ctx.variants()
    functional(ctx, "datascience_probe.py", "DATASCIENCE OK", variants)
    for vname, variant in variants.items():
        if "--workspace" in variant:
            ws = variant[variant.index("--workspace") + 1]
            png = os.path.join(ws, "plot.png")
            check(os.path.isfile(png) and os.path.getsize(png) > 1000, f"[{vname}] plot.png saved to the host workspace")
            st = os.stat(png)
            # --help: the workspace is idmapped, so `sandbox` files are stored as 1000:1000 whatever slot.
            check((st.st_uid, st.st_gid) == (1000, 1000), f"[{vname}] plot.png stored as 1000:1000 ({st.st_uid}:{st.st_gid})")


def case_processes(ctx):
    functional(ctx, "processes_probe.py", "PROCESSES OK")


def case_runtime_dir_0700(ctx):
    """The gateway chmods its runtime dir (default /run/cellgate) to 0700 (gateway.cc); jails must still start."""
    run_dir = "/run/cellgate"
    os.makedirs(run_dir, exist_ok=True)
    old = os.stat(run_dir).st_mode & 0o7777
    os.chmod(run_dir, 0o700)
    try:
        rc, out, _ = run_probe(ctx, ["/usr/bin/true"], [])
    finally:
        os.chmod(run_dir, old)
    check(rc == 0, f"a jail starts while {run_dir} is 0700 (exit {rc})")


def case_setup_failures(ctx):
    """Contract: 125 for bad options, 126 for a failed stage (ready fd + status say which), nothing left."""
    run = Run(ctx, ["/usr/bin/true"], opts=["--memory", "lots"], tag="badopt")
    rc = run.wait(60)
    out = run.output()
    log(out.rstrip())
    check(rc == 125, f"bad option value: exit 125 ({rc})")
    check(out.startswith("cellgate-jail: ") and len(out.strip().splitlines()) == 1, "one `cellgate-jail: ` line on stderr")
    expect_clean(run)
    run = Run(ctx, ["/usr/bin/true"], opts=["--ro-bind", f"/nonexistent-{secrets.token_hex(4)}:/x"], tag="badbind")
    rc = run.wait(60)
    log(run.output().rstrip())
    check(rc in (125, 126), f"missing ro-bind source refused as a bad option or a failed stage ({rc})")
    expect_clean(run)
    not_a_dir = os.path.join(ctx.tmp, "not-a-dir")
    open(not_a_dir, "w").close()
    for what, opts, cmd in (("workspace is not a directory", ["--workspace", not_a_dir], ["/usr/bin/true"]),
                            ("missing command", [], ["/nonexistent/cmd"])):
        run = Run(ctx, cmd, opts=opts, tag="fail")
        rc = run.wait(60)
        log(run.output().rstrip())
        check(rc == 126, f"{what}: exit 126 ({rc})")
        ready = run.ready or {}
        check(ready.get("state") == "failed" and ready.get("stage"), f"{what}: ready fd says failed with a stage: {ready}")
        st = run.status()
        check(st.get("state") == "failed" and st.get("stage") == ready.get("stage"), f"{what}: status file agrees: {st}")
        expect_clean(run)


def case_duplicate_name(ctx):
    """A second jail with a live jail's name (a kernel restart) is refused or gets its own cgroup;
    either way the first jail and its cgroups are undisturbed, and the second cleans up after itself."""
    first = Run(ctx, [PY, "-c", "import time; print('up', flush=True); time.sleep(600)"], pipe=True, tag="dup")
    check("up" in read_until(first, "up", timeout=60), "first jail is up")
    mine = set(harness.cgroup_dirs(first.name))
    res = subprocess.run([ctx.jail, "--name", first.name, "--", PY, "-c",
                          "print(open('/proc/self/cgroup').read())"], capture_output=True, text=True, timeout=60)
    log(res.stdout.rstrip() + res.stderr.rstrip())
    check(res.returncode in (0, 126), f"second jail with the same name ran or was refused ({res.returncode})")
    check(first.proc.poll() is None, "the first jail is still running")
    check(set(harness.cgroup_dirs(first.name)) >= mine and mine, "the first jail's cgroups are still there")
    extra = [d for d in harness.cgroup_dirs(first.name) if d not in mine]
    check(not extra, f"the second jail removed its own cgroups ({extra})")
    first.kill()
    first.wait(60)
    drain(first)
    expect_clean(first)


def case_owner_level(ctx):
    """--cgroup-owner: two jails of one owner sit in cellgate/<owner>/<name> in every tree, a command
    joins one of them there (--join), and the owner's dirs go with the last of its jails."""
    owner = "u-iso" + secrets.token_hex(4)
    runs = [Run(ctx, [PY, "-c", "import time; print('up', flush=True); time.sleep(600)"], opts=["--cgroup-owner", owner],
                pipe=True, tag="own") for _ in range(2)]
    for run in runs:
        check("up" in read_until(run, "up", timeout=60), "jail is up")
    owner_dirs = lambda: glob.glob(f"{harness.CGROUP_BASE}/*/cellgate/{owner}") + glob.glob(f"{harness.CGROUP_BASE}/cellgate/{owner}")
    check(owner_dirs(), f"the owner's dirs exist ({owner})")
    for run in runs:
        st = run.status()
        check(st.get("cgroup", "").endswith(f"/cellgate/{owner}/{run.name}"), f"the status names the owner level: {st.get('cgroup')}")
        leaves = [d for od in owner_dirs() for d in glob.glob(f"{od}/{run.name}")]
        check(len(leaves) == len(owner_dirs()), f"the jail has its dir under the owner's in every tree ({leaves})")
    res = subprocess.run([ctx.jail, "--join", runs[0].status_path, "--", PY, "-c", "print('joined', flush=True)"],
                         capture_output=True, text=True, timeout=60)
    log(res.stdout.rstrip() + res.stderr.rstrip())
    check(res.returncode == 0 and "joined" in res.stdout, f"--join runs in the owner-level jail ({res.returncode})")
    runs[0].kill()
    runs[0].wait(60)
    drain(runs[0])
    expect_clean(runs[0])
    check(owner_dirs(), "the owner's dirs stay while another of its jails runs")
    runs[1].kill()
    runs[1].wait(60)
    drain(runs[1])
    expect_clean(runs[1])
    deadline = time.monotonic() + 10
    while owner_dirs() and time.monotonic() < deadline:
        time.sleep(0.1)
    check(not owner_dirs(), f"the owner's dirs went with its last jail ({owner_dirs()})")


def case_status_file_plant(ctx):
    """The launcher keeps the status file in the kernel-writable ipc dir: whatever the kernel plants at
    the helper's temp name, the helper must still finish, report and clean up."""
    for mode in ("dir", "symlink", "fifo"):
        ipc = ctx.mkdir("ipc")
        status = os.path.join(ipc, "jail.json")
        run = Run(ctx, [PY, "/pyprobes/plant_status.py", mode, status], opts=["--bind-same", ipc],
                  status_path=status, tag="plant")
        try:
            rc = run.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            rc = None
        log(run.output().rstrip())
        check(rc is not None, f"[{mode}] the helper finished after the kernel planted a {mode} at its temp status name")
        check(rc == 0, f"[{mode}] helper exit = the kernel's 0 ({rc})")
        check(not os.path.lexists("/etc/cellgate-probe-target"), f"[{mode}] the root helper wrote nothing through a planted symlink")
        st = final_status(run)
        check(st.get("state") == "exited", f"[{mode}] the final status was still written: {st}")
        expect_clean(run)


CASES = {
    "status_file_plant": case_status_file_plant,
    "setup_failures": case_setup_failures,
    "duplicate_name": case_duplicate_name,
    "owner_level": case_owner_level,
    "runtime_dir_0700": case_runtime_dir_0700,
    "fork_bomb": case_fork_bomb,
    "fork_bomb_killable": case_fork_bomb_killable,
    "fork_bomb_churning": case_fork_bomb_churning,
    "memory_bomb": case_memory_bomb,
    "tmp_fill": case_tmp_fill,
    "nofile": case_nofile,
    "fsize": case_fsize,
    "sigterm_graceful": case_sigterm_graceful,
    "cpu_throttle": case_cpu_throttle,
    "cgroup_config": case_cgroup_config,
    "sigusr1_kills_all": case_sigusr1_kills_all,
    "sigkill_helper": case_sigkill_helper,
    "command_exit_ends_jail": case_command_exit_ends_jail,
    "sigint_interrupts": case_sigint_interrupts,
    "init_reaps_zombies": case_init_reaps_zombies,
    "datascience": case_datascience,
    "processes": case_processes,
}

if __name__ == "__main__":
    harness.main(CASES)
