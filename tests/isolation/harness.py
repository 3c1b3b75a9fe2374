# SPDX-License-Identifier: BSD-3-Clause
# harness: runs a command through the real cellgate-jail (or bare, with --no-jail, to prove a test
# can fail), loops over jail variants, and checks nothing is left behind (processes, cgroups).
"""Shared plumbing for the isolation tests.

Every test script takes: --jail PATH --probes DIR --src DIR --work DIR [--no-jail] CASE.
Exit codes: 0 pass, 1 fail, SKIP_RC (ctest SKIP_RETURN_CODE) when prerequisites are missing.
"""
import argparse
import glob
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP_RC = 4        # ctest SKIP_RETURN_CODE of every isolation test
HELD = 77          # a probe's "the door held" (nsjail's convention)
CGROUP_BASE = "/sys/fs/cgroup"


class Skip(Exception):
    pass


class Failure(Exception):
    pass


def log(*parts):
    print(*parts, flush=True)


def check(cond, what):
    """One assertion: prints it (so ctest logs read as a checklist) and raises on failure."""
    log(("ok:   " if cond else "FAIL: ") + what)
    if not cond:
        raise Failure(what)


class Context:
    """What a test needs: where the jail and probes are, a scratch dir, and the mode."""

    def __init__(self, args):
        self.jail = os.path.abspath(args.jail) if args.jail else ""
        self.probes = os.path.abspath(args.probes)
        self.src = os.path.abspath(args.src)
        self.nojail = args.no_jail
        self.python = "/usr/bin/python3"
        os.makedirs(args.work, exist_ok=True)
        self.tmp = tempfile.mkdtemp(prefix="iso-", dir=os.path.abspath(args.work))
        self.runs = []
        self.cleanups = []
        self.serial = 0

    def require(self):
        if os.geteuid() != 0:
            raise Skip("needs root (the jail writes uid maps and cgroups)")
        try:
            with open("/proc/sys/user/max_user_namespaces") as f:
                if int(f.read()) <= 0:
                    raise Skip("user namespaces are disabled (user.max_user_namespaces=0)")
        except FileNotFoundError:
            raise Skip("kernel without user namespaces")
        if subprocess.run(["/usr/bin/unshare", "-U", "/usr/bin/true"]).returncode != 0:
            raise Skip("cannot create a user namespace here")
        if self.nojail:
            return
        if not (self.jail and os.access(self.jail, os.X_OK)):
            raise Skip(f"cellgate-jail not built ({self.jail})")

    def name(self, tag):
        self.serial += 1
        return f"isot-{tag}-{os.getpid()}-{self.serial}"[:64]

    def mkdir(self, tag, mode=0o755):
        path = tempfile.mkdtemp(prefix=tag + "-", dir=self.tmp)
        os.chmod(path, mode)
        return path

    def variants(self):
        """Jail shapes every escape probe runs under (bubblewrap's `for ALT in ...`)."""
        if self.nojail:
            return {"bare": []}
        ws = self.mkdir("ws")
        same = self.mkdir("same")
        policy = os.path.join(self.mkdir("policy"), "policy.json")
        with open(policy, "w") as f:
            json.dump({"version": 1, "limits": {"memory": "768M", "pids": 200, "tmp_size": "64M"},
                       "env": {"CELLGATE_VARIANT": "policy-file"}, "umask": "0077"}, f)
        return {
            "tmpfs-workspace": [],
            "host-workspace": ["--workspace", ws, "--bind-same", same, "--memory", "512M", "--pids", "128"],
            "policy-file": ["--policy", policy, "--hostname", "sandbox"],
        }

    def finish(self):
        for fn in reversed(self.cleanups):
            try:
                fn()
            except Exception as e:  # cleanup must not mask the verdict
                log(f"cleanup error: {e}")
        problems = []
        for run in self.runs:
            problems += run.leftovers(kill=True)
        shutil.rmtree(self.tmp, ignore_errors=True)
        return problems


def cgroup_dirs(name):
    """The cgroup dirs of jail `name`, including the `<name>-<helper pid>` fallback for a busy name."""
    pats = [f"{CGROUP_BASE}/{mid}cellgate/{low}{n}" for mid in ("*/", "", "*/*/") for low in ("", "*/")
            for n in (name, name + "-[0-9]*")]
    return sorted({p for pat in pats for p in glob.glob(pat)})


def remove_cgroup(path):
    """Kills what is left in a cgroup tree and removes it (deepest first)."""
    for root, dirs, _ in os.walk(path, topdown=False):
        for d in dirs + [""]:
            cg = os.path.join(root, d)
            try:
                with open(os.path.join(cg, "cgroup.procs")) as f:
                    for pid in f.read().split():
                        try:
                            os.kill(int(pid), signal.SIGKILL)
                        except ProcessLookupError:
                            pass
            except OSError:
                pass
    deadline = time.monotonic() + 10
    for root, dirs, _ in os.walk(path, topdown=False):
        for cg in [os.path.join(root, d) for d in dirs] + [root]:
            while True:
                try:
                    os.rmdir(cg)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.05)


def pid_alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def processes_with_marker(marker):
    found = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(p))
        except OSError:
            pass
    return found


class Run:
    """One jailed (or bare) command. stdout/stderr go to a file unless `pipe` is set."""

    def __init__(self, ctx, cmd, variant=(), opts=(), env=None, pass_fds=(), pipe=False, tag="run",
                 extra_env=None, host_env=None, status_path=None, out_prefix=b"", stdin=None, preexec=None):
        self.ctx = ctx
        self.name = ctx.name(tag)
        self.status_path = status_path or os.path.join(ctx.tmp, self.name + ".status.json")
        self.out_path = os.path.join(ctx.tmp, self.name + ".out")
        self.ready = None
        self.rc = None
        ctx.runs.append(self)
        child_env = dict(host_env if host_env is not None else os.environ)
        out = subprocess.PIPE if pipe else open(self.out_path, "wb")
        if out_prefix and not pipe:
            out.write(out_prefix)  # e.g. a shared log's earlier lines
            out.flush()
        if stdin is None:
            stdin = subprocess.PIPE if pipe else subprocess.DEVNULL
        if ctx.nojail:
            argv = [self._bare_path(a) for a in cmd]
            child_env.update(env or {})
            self.proc = subprocess.Popen(argv, stdin=stdin, stdout=out, stderr=subprocess.STDOUT, env=child_env,
                                         cwd=ctx.mkdir("cwd"), pass_fds=pass_fds, start_new_session=True,
                                         preexec_fn=preexec)
        else:
            rfd, wfd = os.pipe()
            argv = [ctx.jail, "--name", self.name, "--status-file", self.status_path, "--ready-fd", str(wfd),
                    "--ro-bind", f"{ctx.probes}:/probes", "--ro-bind", f"{ctx.src}/pyprobes:/pyprobes",
                    *variant, *opts]
            for k, v in (env or {}).items():
                argv += ["--env", f"{k}={v}"]
            argv += ["--", *cmd]
            log("run: " + " ".join(argv))
            self.proc = subprocess.Popen(argv, stdin=stdin, stdout=out, stderr=subprocess.STDOUT, env=child_env,
                                         pass_fds=(wfd, *pass_fds), preexec_fn=preexec)
            os.close(wfd)
            self._read_ready(rfd)
        if not pipe:
            out.close()

    def _bare_path(self, a):
        if a.startswith("/probes/"):
            return os.path.join(self.ctx.probes, a[len("/probes/"):])
        for inside in ("pyprobes", "langprobes"):
            if a.startswith(f"/{inside}/"):
                return os.path.join(self.ctx.src, inside, a[len(inside) + 2:])
        return a

    def _read_ready(self, rfd, timeout=60):
        buf = b""
        deadline = time.monotonic() + timeout
        while b"\n" not in buf and time.monotonic() < deadline:
            r, _, _ = select.select([rfd], [], [], max(0.0, deadline - time.monotonic()))
            if not r:
                break
            chunk = os.read(rfd, 4096)
            if not chunk:
                break
            buf += chunk
        os.close(rfd)
        line = buf.split(b"\n")[0]
        try:
            self.ready = json.loads(line) if line else None
        except ValueError:
            self.ready = {"unparsable": line.decode(errors="replace")}
        log(f"ready: {self.ready}")

    @property
    def pid(self):
        return self.proc.pid

    def wait(self, timeout=120):
        try:
            self.rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            self.rc = self.proc.wait(timeout=30)
            raise Failure(f"{self.name} did not finish within {timeout}s")
        return self.rc

    def kill(self):
        try:
            if self.ctx.nojail:
                os.killpg(self.proc.pid, signal.SIGKILL)
            else:
                self.proc.send_signal(signal.SIGUSR1)
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
        except ProcessLookupError:
            pass

    def output(self):
        try:
            with open(self.out_path, "rb") as f:
                return f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def status(self):
        try:
            with open(self.status_path) as f:
                return json.load(f)
        except (FileNotFoundError, ValueError):
            return {}

    def leftovers(self, kill=False):
        """Processes or cgroups of this jail still around after it ended (killed if `kill`)."""
        problems = []
        if self.proc.poll() is None:
            problems.append(f"{self.name}: helper {self.proc.pid} still running")
            if kill:
                self.kill()
                try:
                    self.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    pass
        if self.ctx.nojail:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
                problems.append(f"{self.name}: bare process group still alive")
            except (ProcessLookupError, PermissionError):
                pass
            return problems
        info = self.ready or {}
        for key in ("init_pid", "kernel_pid"):
            pid = info.get(key)
            if isinstance(pid, int) and pid > 1 and pid_alive(pid):
                problems.append(f"{self.name}: {key} {pid} still alive")
                if kill:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
        for cg in cgroup_dirs(self.name):
            problems.append(f"{self.name}: cgroup {cg} left behind")
            if kill:
                remove_cgroup(cg)
        return problems


def expect_clean(run, grace=10):
    """Asserts the jail left nothing behind (with a grace period for the kernel's teardown)."""
    deadline = time.monotonic() + grace
    while True:
        problems = run.leftovers()
        if not problems or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    check(not problems, f"{run.name}: nothing left behind " + ("; ".join(problems) if problems else ""))


def run_probe(ctx, cmd, variant, timeout=120, **kw):
    """Runs one probe to completion; returns (exit code, output)."""
    run = Run(ctx, cmd, variant=variant, **kw)
    rc = run.wait(timeout)
    out = run.output()
    log(out.rstrip())
    expect_clean(run)
    return rc, out, run


def unavailable_lines(out):
    """A probe's `unavailable:` lines: doors this host does not have (held, with the reason)."""
    return [line[len("unavailable: "):] for line in out.splitlines() if line.startswith("unavailable: ")]


def skip_if_nothing_to_prove(ctx, rc, out):
    """A bare run (the self-test) proves a probe only by catching an open door. When every try met a
    door the host does not have (no `held:` line, only `unavailable:` ones), nothing is proven:
    skip with the probe's reasons instead of passing or failing for the host's sake."""
    gone = unavailable_lines(out)
    if ctx.nojail and rc == HELD and gone and not any(line.startswith("held: ") for line in out.splitlines()):
        raise Skip("no open door on this host to prove the probe on: " + "; ".join(gone))


def expect_held(ctx, cmd, timeout=120, **kw):
    """The standard escape test: in every variant the probe must exit 77 (held)."""
    for vname, variant in ctx.variants().items():
        log(f"--- variant {vname}")
        rc, out, run = run_probe(ctx, cmd, variant, timeout=timeout, **kw)
        skip_if_nothing_to_prove(ctx, rc, out)
        for line in unavailable_lines(out):
            log(f"note: this host lacks the door, so the jail's own defence was not exercised: {line}")
        check(rc == HELD, f"[{vname}] {' '.join(cmd)}: exit {rc} (77 = held)" +
              ("" if rc == HELD else f"; status {run.status()}"))


def read_until(run, needle, timeout=60):
    """Reads the piped output of `run` until a line containing `needle` (returns all text read)."""
    text = ""
    deadline = time.monotonic() + timeout
    fd = run.proc.stdout.fileno()
    while needle not in text and time.monotonic() < deadline:
        r, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not r:
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        text += chunk.decode(errors="replace")
    log(text.rstrip())
    return text


def drain(run):
    try:
        rest = run.proc.stdout.read().decode(errors="replace")
    except (OSError, ValueError):
        rest = ""
    log(rest.rstrip())
    return rest


def run_case(ctx, case, no_jail):
    """Runs one case and exits with its verdict: 0 pass, 1 fail, 2 error, SKIP_RC. With no_jail (the
    probe's self-test, run bare on the host) a containment assertion must have failed."""
    rc = 0
    try:
        ctx.require()
        case(ctx)
    except Skip as e:
        log(f"SKIP: {e}")
        rc = SKIP_RC
    except Failure:
        rc = 1
    except Exception as e:
        log(f"ERROR: {type(e).__name__}: {e}")
        rc = 2
    problems = ctx.finish()
    if no_jail and rc != SKIP_RC:
        ok = rc == 1
        log("SELFTEST PASS: the bare run was caught" if ok else "SELFTEST FAIL: the bare run was not caught")
        sys.exit(0 if ok else 1)
    for p in problems:
        log(f"FAIL: left behind: {p}")
    if problems and rc == 0:
        rc = 1
    log("PASS" if rc == 0 else ("SKIPPED" if rc == SKIP_RC else "FAILED"))
    sys.exit(rc)


def main(cases):
    """Entry point of each test script: parses args, runs one case, maps the verdict to an exit code."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--jail", default="")
    ap.add_argument("--probes", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--no-jail", action="store_true", help="run bare: the test must then FAIL")
    ap.add_argument("case", choices=sorted(cases))
    args = ap.parse_args()
    run_case(Context(args), cases[args.case], args.no_jail)
