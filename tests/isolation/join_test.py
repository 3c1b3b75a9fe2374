#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# join_test: `cellgate-jail --join STATUS_FILE -- CMD` against real jails (issue 6, the `process`
# tool). One case per invocation; exit 0 pass, 1 fail, 2 error, 4 skip (no root / user namespaces).
# --no-jail runs each joined command bare on the host instead (the self-test: it must be caught).
import argparse
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from harness import Failure, Skip, check, log, run_case

CGROUP_BASE = "/sys/fs/cgroup"


def wait_until(fn, timeout, what):
    """Polls fn until it is truthy; the deadline is generous (a hang, not a speed limit)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = fn()
        if v:
            return v
        time.sleep(0.05)
    log(f"FAIL: timed out waiting for {what}")
    raise Failure(f"timed out waiting for {what}")


def pid_alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def pids_with_marker(marker):
    """Host pids whose argv[0] is exactly `marker` (not the helper, whose arguments mention it)."""
    out = []
    for d in glob.glob("/proc/[0-9]*"):
        try:
            with open(d + "/cmdline", "rb") as f:
                if f.read().split(b"\0")[0] == marker.encode():
                    out.append(int(d.split("/")[-1]))
        except OSError:
            pass
    return out


class Jail:
    """One running jail (CMD = a long sleep) with its status file in a private 0700 dir."""

    def __init__(self, ctx, opts=()):
        self.ctx = ctx
        self.name = f"isoj-{os.getpid()}-{len(ctx.jails)}"
        self.dir = tempfile.mkdtemp(prefix="status-", dir=ctx.tmp)
        os.chmod(self.dir, 0o700)
        self.status_file = os.path.join(self.dir, "status.json")
        self.proc = subprocess.Popen([ctx.jail, "--name", self.name, "--status-file", self.status_file, *opts,
                                      "--", "/bin/sh", "-c", "echo jailed > /workspace/kernel-file; exec sleep 600"],
                                     stdin=subprocess.DEVNULL)
        ctx.jails.append(self)
        self.status = wait_until(self._running, 60, "the jail to run")

    def _running(self):
        try:
            with open(self.status_file) as f:
                s = json.load(f)
        except (OSError, ValueError):
            return None
        if s.get("state") == "failed":
            raise Failure(f"jail failed: {s}")
        return s if s.get("state") == "running" else None

    def cgroup_dirs(self):
        cg = self.status["cgroup"]
        leaf = cg.rsplit("/", 1)[-1]
        return sorted(set(glob.glob(f"{CGROUP_BASE}/*/cellgate/{leaf}") + glob.glob(f"{CGROUP_BASE}/cellgate/{leaf}")))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGUSR1)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Context:
    def __init__(self, args):
        self.jail = os.path.abspath(args.jail) if args.jail else ""
        self.nojail = args.no_jail
        os.makedirs(args.work, exist_ok=True)
        self.tmp = tempfile.mkdtemp(prefix="join-", dir=os.path.abspath(args.work))
        self.jails = []
        self.procs = []
        self.cleanup_pids = []  # joined commands that must not outlive their helper: a leftover fails
        self.kill_pids = []     # joined commands to kill at the end

    def require(self):
        if os.geteuid() != 0:
            raise Skip("needs root (the jail writes uid maps and cgroups)")
        if subprocess.run(["/usr/bin/unshare", "-U", "/usr/bin/true"]).returncode != 0:
            raise Skip("cannot create a user namespace here")
        if not (self.jail and os.access(self.jail, os.X_OK)):
            raise Skip(f"cellgate-jail not built ({self.jail})")

    def join_argv(self, jail, cmd, env=()):
        if self.nojail:
            # Bare: a plain shell parent stands in for the helper (it runs cmd as its child).
            return ["/bin/sh", "-c", '"$@"; rc=$?; exit $rc', "sh", *cmd]
        args = [self.jail, "--join", jail.status_file]
        for e in env:
            args += ["--env", e]
        return args + ["--"] + list(cmd)

    def run(self, jail, cmd, env=(), timeout=120, **kw):
        """Joins, waits, returns (exit code, stdout, stderr)."""
        r = subprocess.run(self.join_argv(jail, cmd, env), capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL, **kw)
        log(f"$ {' '.join(cmd)} -> {r.returncode}\n{r.stdout}{r.stderr}".rstrip())
        return r.returncode, r.stdout, r.stderr

    def spawn(self, jail, cmd, **kw):
        p = subprocess.Popen(self.join_argv(jail, cmd), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             text=True, **kw)
        self.procs.append(p)
        return p

    def finish(self):
        problems = []
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for pid in self.cleanup_pids:
            if pid_alive(pid):
                problems.append(f"process {pid}")
                os.kill(pid, signal.SIGKILL)
        for pid in self.kill_pids:
            if pid_alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for j in self.jails:
            j.stop()
            problems += [f"cgroup dir {d}" for d in j.cgroup_dirs()] if j.status.get("cgroup") else []
        shutil.rmtree(self.tmp, ignore_errors=True)
        return problems


# ---- cases -------------------------------------------------------------------------------------

def case_identity(ctx):
    j = Jail(ctx)
    rc, out, _ = ctx.run(j, ["/bin/sh", "-c", "id -u; id -un; id -G; hostname; pwd"])
    check(rc == 0, "joined id/hostname/pwd ran")
    check(out.split("\n")[:5] == ["1000", "sandbox", "1000", "sandbox", "/workspace"],
          "uid 1000 sandbox, groups 1000 only, host sandbox, cwd /workspace")


def case_same_jail(ctx):
    j = Jail(ctx)
    rc, out, _ = ctx.run(j, ["/bin/sh", "-c", "cat /workspace/kernel-file; tr '\\0' ' ' < /proc/1/cmdline; echo;"
                                               "tr '\\0' ' ' < /proc/2/cmdline; echo; ls /proc | grep -c '^[0-9]'"])
    lines = out.split("\n")
    check(rc == 0 and lines[0] == "jailed", "sees the kernel's /workspace file (same mount namespace)")
    check(lines[1].strip() == "cellgate-init", "pid 1 is the jail's init (same pid namespace)")
    check(lines[2].startswith("sleep 600"), "pid 2 is the jail's kernel")
    check(len(lines) > 3 and lines[3].isdigit() and int(lines[3]) < 10, "sees only the jail's few processes")


def case_lockdown(ctx):
    j = Jail(ctx)
    r, w = os.pipe()  # an extra fd in the helper: it must not reach the command
    os.set_inheritable(w, True)
    try:
        os.environ["CELLGATE_JOIN_LEAK"] = "host-secret"
        rc, out, _ = ctx.run(j, ["/bin/sh", "-c", "grep -E '^(Cap[A-Za-z]+|NoNewPrivs|Seccomp):' /proc/self/status; env; ls /proc/self/fd"],
                             env=["JOINED=yes"], pass_fds=(w,))
    finally:
        del os.environ["CELLGATE_JOIN_LEAK"]
        os.close(r)
        os.close(w)
    check(rc == 0, "ran")
    fields = dict(line.split(":", 1) for line in out.split("\n") if line.startswith(("Cap", "NoNewPrivs", "Seccomp:")))
    caps = {k: v.strip() for k, v in fields.items() if k.startswith("Cap")}
    check(len(caps) == 5 and all(int(v, 16) == 0 for v in caps.values()), f"every capability set is empty {caps}")
    check(fields.get("NoNewPrivs", "").strip() == "1", "NoNewPrivs 1")
    check(fields.get("Seccomp", "").strip() == "2", "Seccomp 2 (filter mode)")
    check("JOINED=yes" in out.split("\n"), "--env reaches the command")
    check("CELLGATE_JOIN_LEAK" not in out, "the caller's environment is not inherited")
    check("HOME=/workspace" in out.split("\n") and "USER=sandbox" in out.split("\n"), "the jail's default environment")
    fds = [l for l in out.split("\n") if l.isdigit()]
    check(set(fds) <= {"0", "1", "2", "3"} and len(fds) <= 4, f"only stdio (and ls's own dir fd) open: {fds}")


def host_pid_of(ctx, marker):
    pid = wait_until(lambda: (pids_with_marker(marker) or [None])[0], 30, f"process {marker}")
    ctx.kill_pids.append(pid)  # never left running, whatever the verdict (stderr is ctest's pipe)
    return pid


def case_cgroups(ctx):
    j = Jail(ctx)
    marker = f"joincg{os.getpid()}"
    p = ctx.spawn(j, ["/bin/bash", "-c", f"exec -a {marker} sleep 300"])
    pid = host_pid_of(ctx, marker)
    dirs = j.cgroup_dirs()
    # One dir on a pure v2 host; on a v1 hybrid one per controller plus unified/.
    check(len(dirs) >= 1 and j.status["cgroup"] in dirs, f"the jail has cgroup dirs {dirs}")
    for d in dirs:
        with open(d + "/cgroup.procs") as f:
            check(str(pid) in f.read().split(), f"joined pid {pid} is in {d}")
    p.kill()


def read_int(path, key=None):
    with open(path) as f:
        text = f.read()
    if key is None:
        return int(text.split()[0])
    for line in text.split("\n"):
        if line.startswith(key + " "):
            return int(line.split()[1])
    return 0


def case_fork_bomb(ctx):
    j = Jail(ctx, ["--pids", "40"])
    pids_dir = next((d for d in j.cgroup_dirs() if "/pids/" in d), None) or j.status["cgroup"]
    before = read_int(pids_dir + "/pids.events", "max")
    # 200 background sleeps from one joined shell: the jail's pids limit (40 in all) must stop it.
    p = ctx.spawn(j, ["/bin/sh", "-c", "i=0; while [ $i -lt 200 ]; do sleep 60 & i=$((i+1)); done; wait"])
    wait_until(lambda: read_int(pids_dir + "/pids.events", "max") > before, 120, "the jail's pids limit to be hit")
    check(True, f"the joined fork bomb hit the jail's pids limit ({pids_dir}/pids.events)")
    current = read_int(pids_dir + "/pids.current")
    check(current <= 40, f"the jail holds at most 40 tasks ({current})")
    check(j.proc.poll() is None, "the jail itself survived")
    p.kill()


def case_memory(ctx):
    j = Jail(ctx, ["--memory", "96M"])
    rc, _, _ = ctx.run(j, ["/usr/bin/python3", "-c", "x = b'x' * (512 << 20); print(len(x))"])
    check(rc == 128 + 9, "a joined 512 MiB allocation was killed (SIGKILL)")
    mem = next((d for d in j.cgroup_dirs() if "/memory/" in d), None)
    if mem:
        check(read_int(mem + "/memory.oom_control", "oom_kill") > 0, "the jail's memory cgroup OOM-killed it")
    else:
        check(read_int(j.status["cgroup"] + "/memory.events", "oom_kill") > 0, "the jail's memory cgroup OOM-killed it")


def case_network(ctx):
    j = Jail(ctx)
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    # Outbound: held only when the kernel refuses at once for want of a route (ENETUNREACH), before any
    # packet leaves. TEST-NET-1 (RFC 5737): a bare run (the self-test), whose SYNs do leave, targets no one.
    code = ("import errno,socket,sys\n"
            "bad=[]\n"
            "s=socket.socket(); s.settimeout(5)\n"
            f"try: s.connect(('127.0.0.1',{port})); bad.append('host loopback listener')\n"
            "except OSError: pass\n"
            "for a in [('192.0.2.1',53),('192.0.2.1',443)]:\n"
            "  s=socket.socket(); s.setblocking(False)\n"
            "  e=s.connect_ex(a)\n"
            "  if e != errno.ENETUNREACH: bad.append((a, errno.errorcode.get(e, e)))\n"
            "print('reached', bad); sys.exit(1 if bad else 0)\n")
    try:
        rc, out, _ = ctx.run(j, ["/usr/bin/python3", "-c", code])
    finally:
        srv.close()
    check(rc == 0, "no host loopback listener and no outbound address is reachable")


def case_host_files(ctx):
    j = Jail(ctx)
    secret = os.path.join(ctx.tmp, "host-secret")
    with open(secret, "w") as f:
        f.write("s3cret\n")
    rc, out, _ = ctx.run(j, ["/bin/sh", "-c", f"cat {j.status_file} {secret} /etc/shadow /root/.bashrc 2>/dev/null; "
                                               f"ls {os.path.dirname(j.status_file)} 2>/dev/null; true"])
    check("running" not in out and "s3cret" not in out and "root:" not in out and "status.json" not in out,
          "cannot read the status file, a host file, /etc/shadow or /root")


def rmdir_ok(path):
    try:
        os.rmdir(path)
        return True
    except FileNotFoundError:
        return True
    except OSError:
        return False


def expect_refused(ctx, status_file, what, needle="join:"):
    r = subprocess.run([ctx.jail, "--join", status_file, "--", "/bin/true"], capture_output=True, text=True, timeout=60)
    log(f"{what}: rc {r.returncode}: {r.stderr.strip()}")
    check(r.returncode == 126, f"{what}: refused with 126")
    lines = r.stderr.strip().split("\n")
    check(len(lines) == 1 and lines[0].startswith("cellgate-jail: ") and needle in lines[0], f"{what}: one clear line")


def case_forged_status(ctx):
    if ctx.nojail:
        raise Skip("no bare form: refusing is the helper's job")
    j = Jail(ctx)
    good = dict(j.status)
    sleeper = subprocess.Popen(["sleep", "300"])
    ctx.procs.append(sleeper)
    forged = [
        ("init_pid = the test's own pid", {"init_pid": os.getpid(), "helper_pid": os.getppid()}),
        ("init_pid = a host child of ours", {"init_pid": sleeper.pid, "helper_pid": os.getpid()}),
        ("init_pid = 1", {"init_pid": 1}),
        ("init_pid = the jail's kernel", {"init_pid": good["kernel_pid"]}),
        ("helper_pid of another process", {"helper_pid": os.getpid()}),
        ("wrong host_uid", {"host_uid": good["host_uid"] + 1}),
        ("not running", {"state": "exited"}),
        ("cgroup of another jail", {"cgroup": good["cgroup"].rsplit("/", 1)[0] + "/nonexistent"}),
    ]
    for what, change in forged:
        path = os.path.join(j.dir, "forged.json")
        with open(path, "w") as f:
            json.dump({**good, **change}, f)
        expect_refused(ctx, path, what, "cgroup" if "cgroup" in change else "join:")
    with open(os.path.join(j.dir, "garbage.json"), "w") as f:
        f.write("{not json")
    expect_refused(ctx, os.path.join(j.dir, "garbage.json"), "garbage")
    expect_refused(ctx, os.path.join(j.dir, "missing.json"), "missing file")
    # A stale file: the jail ended (SIGKILL of its helper, so the file still says "running").
    stale = os.path.join(j.dir, "stale.json")
    shutil.copy(j.status_file, stale)
    j.proc.kill()
    j.proc.wait()
    wait_until(lambda: not pid_alive(good["init_pid"]), 30, "the jail's init to die")
    expect_refused(ctx, stale, "stale status of a dead jail")
    rc, _, _ = ctx.run(j, ["/bin/true"])
    check(rc == 126, "joining a dead jail fails with 126")
    # Its helper died by SIGKILL, so nobody else removes its cgroup dirs.
    for d in reversed(j.cgroup_dirs()):
        wait_until(lambda: rmdir_ok(d), 30, f"rmdir {d}")


# Calls the kernel grants any unprivileged process but the default policy denies (EPERM from the
# filter). io_uring_setup is refused by the kernel itself where kernel.io_uring_disabled is set, and
# add_key where CONFIG_KEYS is off: a refusal then would prove nothing about the filter.
POLICY_DENIED = {
    "io_uring_setup": "params = ctypes.create_string_buffer(120)\nr = libc.syscall(425, 1, params)\n",
    "add_key": "r = libc.syscall(248, b'user', b'cellgate-join-probe', b'x', 1, -2)\n",  # process keyring
}


def denied_call_code(name):
    """Python that makes the call: exit 0 when refused with EPERM, 1 when granted, 2 otherwise."""
    return ("import ctypes, os, sys\nlibc = ctypes.CDLL(None, use_errno=True)\n" + POLICY_DENIED[name] +
            "e = ctypes.get_errno()\n"
            f"print('{name}', r, os.strerror(e) if r < 0 else 'granted')\n"
            "sys.exit(1 if r >= 0 else 0 if e == 1 else 2)\n")


def granted_to_nobody(name):
    """True when this kernel grants the call to an unprivileged process (uid/gid 65534, bare)."""
    def nobody():
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
    r = subprocess.run(["/usr/bin/python3", "-c", denied_call_code(name)], preexec_fn=nobody, cwd="/",
                       capture_output=True, text=True, timeout=60)
    log(f"bare, as nobody: {r.stdout.strip()} {r.stderr.strip()}".rstrip())
    return r.returncode == 1


def case_seccomp(ctx):
    name = next((n for n in POLICY_DENIED if granted_to_nobody(n)), None)
    if name is None:
        raise Skip("this kernel grants none of " + ", ".join(POLICY_DENIED) + " to an unprivileged process: "
                   "a refusal in the jail would not show the filter")
    j = Jail(ctx)
    rc, _, _ = ctx.run(j, ["/usr/bin/python3", "-c", denied_call_code(name)])
    check(rc == 0, f"{name} (granted to nobody on this host) is refused with EPERM by the default policy's filter")
    policy = os.path.join(j.dir, "policy.json")
    with open(policy, "w") as f:
        json.dump({"version": 1, "seccomp": {"deny": ["mkdir", "mkdirat"]}}, f)
    mk = ["/bin/sh", "-c", "mkdir /tmp/joined-dir && echo made"]
    args = ctx.join_argv(j, mk) if ctx.nojail else [ctx.jail, "--join", j.status_file, "--policy", policy, "--"] + mk
    r = subprocess.run(args, capture_output=True, text=True, timeout=60)
    log(f"mkdir under a policy denying it -> {r.returncode}: {r.stdout}{r.stderr}".rstrip())
    check(r.returncode != 0 and "made" not in r.stdout, "--policy: its extra deny applies to the joined command")
    rc, out, _ = ctx.run(j, mk)
    check(rc == 0 and "made" in out, "without that policy mkdir works")


def case_workspace(ctx):
    ws = tempfile.mkdtemp(prefix="ws-", dir=ctx.tmp)
    j = Jail(ctx, ["--workspace", ws])
    rc, _, _ = ctx.run(j, ["/bin/sh", "-c", "echo from-join > /workspace/joined.txt"])
    path = os.path.join(ws, "joined.txt")
    check(rc == 0 and os.path.exists(path), "a joined command writes the jail's workspace")
    st = os.stat(path)
    check((st.st_uid, st.st_gid) == (1000, 1000), f"stored as 1000:1000 like the kernel's files ({st.st_uid}:{st.st_gid})")
    with open(os.path.join(ws, "kernel-file")) as f:
        check(f.read() == "jailed\n", "the kernel's file is in the same workspace")


def case_sigkill_helper(ctx):
    j = Jail(ctx)
    marker = f"joinkill{os.getpid()}"
    p = ctx.spawn(j, ["/bin/bash", "-c", f"exec -a {marker} sleep 300"])
    pid = host_pid_of(ctx, marker)
    ctx.cleanup_pids.append(pid)
    p.kill()
    p.wait()
    check(p.returncode == -signal.SIGKILL, "the join helper was SIGKILLed")
    wait_until(lambda: not pid_alive(pid), 30, "the joined command to die with its helper")
    check(not pid_alive(pid), "the joined command died with its helper (PDEATHSIG)")
    check(j.proc.poll() is None, "the jail lives on")


def case_signals(ctx):
    j = Jail(ctx)
    for sig, expect in ((signal.SIGINT, 42), (signal.SIGTERM, 43)):
        p = ctx.spawn(j, ["/bin/sh", "-c", "trap 'exit 42' INT; trap 'exit 43' TERM; echo ready; "
                                           "while :; do sleep 0.1; done"])
        check(p.stdout.readline().strip() == "ready", "the joined shell installed its traps")
        p.send_signal(sig)
        p.wait(60)
        check(p.returncode == expect, f"{signal.Signals(sig).name} to the helper reached the command "
                                      f"(exit {p.returncode}, want {expect})")


def case_exit_codes(ctx):
    j = Jail(ctx)
    rc, _, _ = ctx.run(j, ["/bin/sh", "-c", "exit 7"])
    check(rc == 7, "exit code 7 propagates")
    rc, _, _ = ctx.run(j, ["/bin/sh", "-c", "kill -KILL $$"])
    check(rc == 128 + 9, "death by SIGKILL gives 137")
    rc, _, _ = ctx.run(j, ["/bin/sh", "-c", "echo in | cat; exit 0"])
    check(rc == 0, "exit 0")
    if not ctx.nojail:
        rc, _, err = ctx.run(j, ["no-such-command-xyz"])
        check(rc == 126 and "exec no-such-command-xyz" in err, "a missing command: 126, one exec line")
        r = subprocess.run([ctx.jail, "--join", j.status_file, "--memory", "1G", "--", "true"], capture_output=True)
        check(r.returncode == 125, "a jail-building option with --join: 125")


def case_background_reaped(ctx):
    if ctx.nojail:
        raise Skip("no bare form")
    j = Jail(ctx)
    marker = f"joinbg{os.getpid()}"
    # The background job keeps stdout open: without the group kill the caller would wait 300 s.
    rc, out, _ = ctx.run(j, ["/bin/bash", "-c", f"(exec -a {marker} sleep 300) & echo started"], timeout=120)
    check(rc == 0 and "started" in out, "the command returned while its background job was running")
    wait_until(lambda: not pids_with_marker(marker), 30, "the leftover job to be gone")
    check(True, "the command's leftover process group was killed (no process of it left in the jail)")


def case_jail_end_kills(ctx):
    j = Jail(ctx)
    marker = f"joinend{os.getpid()}"
    p = ctx.spawn(j, ["/bin/bash", "-c", f"exec -a {marker} sleep 300"])
    pid = host_pid_of(ctx, marker)
    j.proc.send_signal(signal.SIGUSR1)  # the jail ends at once
    j.proc.wait(60)
    p.wait(60)
    check(p.returncode == 128 + 9, f"the join helper reports the command killed ({p.returncode})")
    check(not pid_alive(pid), "the joined command did not outlive the jail")


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jail", default="")
    ap.add_argument("--work", required=True)
    ap.add_argument("--no-jail", action="store_true", help="run joined commands bare: the test must then FAIL")
    ap.add_argument("case", choices=sorted(CASES))
    args = ap.parse_args()
    run_case(Context(args), CASES[args.case], args.no_jail)


if __name__ == "__main__":
    main()
