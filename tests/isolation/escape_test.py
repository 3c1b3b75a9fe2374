# SPDX-License-Identifier: BSD-3-Clause
# escape_test: one case per escape attempt; each runs a probe in every jail variant and requires
# exit 77 (held). With --no-jail the same probes run bare on the host, where every case must FAIL.
import ctypes
import json
import os
import re
import resource
import secrets
import signal
import socket
import struct
import subprocess
import threading

import harness
from harness import check, expect_held, log, run_probe

PY = "/usr/bin/python3"
NS_TYPES = ["user", "mnt", "net", "pid", "ipc", "uts", "cgroup", "time"]


def canary(ctx, directory, tag):
    """A host file with a random name in `directory`, removed when the test ends."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f".cellgate-canary-{tag}-{secrets.token_hex(4)}")
    with open(path, "w") as f:
        f.write("host secret\n")
    ctx.cleanups.append(lambda: os.unlink(path))
    return path


def sleeper(ctx):
    """A host process the probes try to see, trace and kill; returns (pid, marker)."""
    marker = f"cellgate-sleeper-{secrets.token_hex(6)}"
    proc = subprocess.Popen([os.path.join(ctx.probes, "sleeper"), marker])

    def stop():
        proc.kill()
        proc.wait()
    ctx.cleanups.append(stop)
    return proc, marker


def sleeper_survives(proc):
    check(proc.poll() is None, f"host process {proc.pid} survived")


def case_read_shadow(ctx):
    expect_held(ctx, ["/probes/read_files", "/etc/shadow", "/etc/gshadow", "/etc/sudoers"])


def case_read_root_home(ctx):
    c = canary(ctx, "/root", "root")
    expect_held(ctx, ["/probes/read_files", c, "/root/.bash_history", "/root/.ssh/id_rsa"])
    expect_held(ctx, ["/probes/list_dirs", os.path.basename(c), "/root"])


def case_read_repo(ctx):
    c = canary(ctx, ctx.tmp, "repo")
    expect_held(ctx, ["/probes/read_files", c, os.path.join(ctx.src, "harness.py"),
                      os.path.join(ctx.src, "..", "..", "CMakeLists.txt")])
    expect_held(ctx, ["/probes/list_dirs", os.path.basename(c), ctx.tmp, os.path.dirname(ctx.tmp)])


def case_read_gateway_data(ctx):
    # The gateway's data dir (`cellgate serve --data-dir`) holds tokens and every user's files.
    data = ctx.mkdir("data", 0o700)
    token = canary(ctx, data, "token")
    other_ws = ctx.mkdir("other-user-ws", 0o755)
    other = canary(ctx, other_ws, "ws")
    expect_held(ctx, ["/probes/read_files", token, other])
    expect_held(ctx, ["/probes/list_dirs", os.path.basename(token), data])


def case_write_outside(ctx):
    expect_held(ctx, ["/probes/write_files", "/", "/usr", "/usr/bin", "/usr/lib", "/etc", "/var", "/probes",
                      "/pyprobes", "/proc", "/dev", "/sys", "/run"])


def case_write_proc_sys(ctx):
    expect_held(ctx, ["/probes/write_proc_sys"])


def case_write_run_cellgate(ctx):
    # Another kernel's ipc dir and the uid-slot locks live under /run/cellgate.
    os.makedirs("/run/cellgate", exist_ok=True)
    other = os.path.join("/run/cellgate", f"isot-{os.getpid()}")
    os.makedirs(other, exist_ok=True)
    os.chmod(other, 0o777)
    ctx.cleanups.append(lambda: subprocess.run(["rm", "-rf", other]))
    c = canary(ctx, other, "ipc")
    expect_held(ctx, ["/probes/write_files", other, "/run/cellgate", "/run/cellgate/uids"])
    expect_held(ctx, ["/probes/read_files", c])


def case_mknod(ctx):
    expect_held(ctx, ["/probes/mknod_dev", "/tmp", "/workspace", "/dev/shm", "/dev"])


def case_mount(ctx):
    expect_held(ctx, ["/probes/mount_fs", "/tmp"])


def case_pivot_chroot_umount(ctx):
    c = canary(ctx, ctx.tmp, "chroot")
    expect_held(ctx, ["/probes/pivot_chroot", "/tmp", c])


def case_ptrace(ctx):
    proc, _ = sleeper(ctx)
    expect_held(ctx, ["/probes/ptrace_proc", str(proc.pid)])
    sleeper_survives(proc)


def case_ps_view(ctx):
    _, marker = sleeper(ctx)
    expect_held(ctx, ["/probes/ps_view", marker, "8"])
    # The same through procps `ps`, as a user would look.
    script = (f"ps -eo pid,args; ps -eo args | grep -v grep | grep -q '^[^ ]*sleeper {marker}' && exit 1; "
              "[ $(ps -e --no-headers | wc -l) -le 8 ] && exit 77; exit 1")
    expect_held(ctx, ["/bin/sh", "-c", script])


def case_kill_host(ctx):
    proc, marker = sleeper(ctx)
    expect_held(ctx, ["/probes/kill_host", str(proc.pid), marker])
    sleeper_survives(proc)


def case_proc_root(ctx):
    proc, _ = sleeper(ctx)
    c = canary(ctx, ctx.tmp, "procroot")
    expect_held(ctx, ["/probes/proc_root", c, str(proc.pid)])


def case_setns(ctx):
    proc, _ = sleeper(ctx)
    expect_held(ctx, ["/probes/setns_probe", str(proc.pid)])


def make_unshare_case(ns):
    return lambda ctx: expect_held(ctx, ["/probes/unshare_ns", ns])


def case_nested_userns(ctx):
    expect_held(ctx, ["/probes/nested_userns"])


def simple(probe):
    return lambda ctx: expect_held(ctx, [f"/probes/{probe}"])


def fs_root_handle(path):
    """(root dir, handle type, handle hex) of the root of the filesystem holding `path`, taken on the
    host with name_to_handle_at(2); OSError where that filesystem exports no handles."""
    root = os.path.realpath(path)
    dev = os.stat(root).st_dev
    while root != "/" and os.stat(os.path.dirname(root)).st_dev == dev:
        root = os.path.dirname(root)
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(8 + 128)  # struct file_handle + MAX_HANDLE_SZ
    struct.pack_into("I", buf, 0, 128)
    mount_id = ctypes.c_int()
    if libc.name_to_handle_at(-100, root.encode(), buf, ctypes.byref(mount_id), 0) != 0:  # AT_FDCWD
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), root)
    size, handle_type = struct.unpack_from("Ii", buf, 0)
    return root, handle_type, buf.raw[8:8 + size].hex()


def case_open_by_handle_at(ctx):
    """The shocker escape with the real handle of the host root of /usr's filesystem (any filesystem
    type, not only ext4's forged inode 2): opening it through the jail's /usr bind is the escape."""
    try:
        root, handle_type, handle = fs_root_handle("/usr")
    except OSError as e:
        if ctx.nojail:
            raise harness.Skip(f"the filesystem holding /usr exports no file handles ({e.strerror}): nothing to open")
        log(f"note: no handle for /usr's filesystem ({e.strerror}); the probe forges shocker's ext4 one")
        expect_held(ctx, ["/probes/handle_probe", "/usr"])
        return
    log(f"handle of {root} (root of /usr's filesystem): type {handle_type}, {handle}")
    expect_held(ctx, ["/probes/handle_probe", "/usr", str(handle_type), handle])


def case_tcp_host_loopback(ctx):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    ctx.cleanups.append(srv.close)
    port = srv.getsockname()[1]
    expect_held(ctx, ["/probes/tcp_connect", "127.0.0.1", str(port)])
    srv.setblocking(False)
    try:
        srv.accept()
        accepted = True
    except BlockingIOError:
        accepted = False
    check(not accepted, "the host listener saw no connection")


def case_outbound_net(ctx):
    expect_held(ctx, ["/probes/outbound_net"])


def case_abstract_unix(ctx):
    name = f"cellgate-test-{os.getpid()}"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind("\0" + name)
    srv.listen(8)
    ctx.cleanups.append(srv.close)
    expect_held(ctx, ["/probes/abstract_unix", name])


def case_environ(ctx):
    name = f"CELLGATE_TEST_SECRET_{os.getpid()}"
    value = f"s3cr3t-{secrets.token_hex(8)}"
    host_env = dict(os.environ)
    host_env[name] = value
    expect_held(ctx, ["/probes/environ_probe", name, value], host_env=host_env)
    expect_held(ctx, ["/usr/bin/python3", "/pyprobes/environ_probe.py", name, value], host_env=host_env)


def case_init_cmdline(ctx):
    expect_held(ctx, [PY, "/pyprobes/cmdline_probe.py"])


# The helper's documented defaults, plus CELLGATE_VARIANT from the policy-file variant's policy env.
DEFAULT_ENV = ["PATH", "HOME", "LANG", "TERM", "USER", "LOGNAME", "SHELL", "MPLBACKEND",
               "IPYTHONDIR", "XDG_CACHE_HOME", "MPLCONFIGDIR", "CELLGATE_VARIANT"]


def case_env_exact(ctx):
    """Contract: the kernel's environment is exactly --env plus defaults (caller's values win)."""
    host_env = dict(os.environ, CELLGATE_HOST_ONLY="1", LD_PRELOAD="/nonexistent.so", PYTHONPATH="/host")
    # TERM, not LANG, shows "caller's value wins": LANG=C would make Python itself add LC_CTYPE (PEP 538).
    given = {"FOO": "bar", "TERM": "dumb", "HOME": "/workspace", "USER": "sandbox", "LANG": "C.UTF-8"}
    expect_held(ctx, [PY, "/pyprobes/env_probe.py", *DEFAULT_ENV, "--", *(f"{k}={v}" for k, v in given.items())],
                env={"FOO": "bar", "TERM": "dumb"}, host_env=host_env)


def case_leaked_fds(ctx):
    secret = canary(ctx, ctx.tmp, "fd")
    fd = os.open(secret, os.O_RDONLY)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    try:
        # Inheritable descriptors at fixed numbers, as a careless gateway would leak them.
        os.dup2(fd, 5, inheritable=True)
        os.dup2(sock.fileno(), 9, inheritable=True)
        expect_held(ctx, ["/probes/fd_probe"], pass_fds=(5, 9))
    finally:
        for n in {5, 9, fd} - {sock.fileno()}:
            os.close(n)
        sock.close()


def case_stdio_reopen(ctx):
    """The helper's stdout/stderr may be a host file with other content (a shared log). Re-opening
    /proc/self/fd/1 or /2 for reading must not give the kernel that content."""
    secret = f"gateway-log-secret-{secrets.token_hex(6)}"
    expect_held(ctx, ["/probes/stdio_reopen", secret], out_prefix=(f"earlier log line: token={secret}\n").encode())


def case_tiocsti(ctx):
    """TIOCSTI on a fresh pty, and on a host terminal handed to the helper as stdin."""
    expect_held(ctx, ["/probes/tiocsti_probe"])
    master, slave = os.openpty()
    try:
        expect_held(ctx, ["/probes/tiocsti_probe"], stdin=slave)
    finally:
        os.close(master)
        os.close(slave)


def settable(step):
    """True when `step` (a preexec function) works on this host: tried in a throwaway child."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            step()
            code = 0
        finally:
            os._exit(code)  # never let the forked child return into the test
    _, st = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(st) == 0


def case_priority(ctx):
    """No real-time scheduling, negative nice or RT I/O class for the kernel - also when the caller's
    RLIMIT_RTPRIO / RLIMIT_NICE would allow them without privileges (as audio or systemd setups do)."""
    expect_held(ctx, ["/probes/priority_probe"])

    def generous_rlimits():
        resource.setrlimit(resource.RLIMIT_RTPRIO, (50, 50))
        resource.setrlimit(resource.RLIMIT_NICE, (40, 40))
    if not settable(generous_rlimits):
        # Raising a hard limit needs CAP_SYS_RESOURCE, which some root shells lack (this VM's does).
        log("note: cannot raise RLIMIT_RTPRIO/RLIMIT_NICE here; the inherited-rlimit variant is not run")
        return
    expect_held(ctx, ["/probes/priority_probe"], preexec=generous_rlimits)


def case_sched_inherit(ctx):
    """A helper started at SCHED_FIFO with nice -5 and real-time I/O class gives none of it to the kernel."""
    libc = ctypes.CDLL(None, use_errno=True)

    def rt_io():
        # ioprio_set(IOPRIO_WHO_PROCESS, self, IOPRIO_CLASS_RT << 13); x86_64 syscall 251
        if libc.syscall(251, 1, 0, (1 << 13) | 0) != 0:
            raise OSError(ctypes.get_errno(), "ioprio_set")
    steps = {"SCHED_FIFO": lambda: os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1)),
             "nice -5": lambda: os.setpriority(os.PRIO_PROCESS, 0, -5),
             "the real-time I/O class": rt_io}
    usable = []
    for name, fn in steps.items():
        if settable(fn):
            usable.append(fn)
        else:  # e.g. SCHED_FIFO in a cgroup without real-time budget (CONFIG_RT_GROUP_SCHED)
            log(f"note: this host does not let the test start a caller with {name}; that part is not run")
    if not usable:
        raise harness.Skip("this host lets the test start a caller with none of SCHED_FIFO, nice -5, real-time I/O")

    def caller():
        for fn in usable:
            fn()
    expect_held(ctx, ["/probes/sched_inherit"], preexec=caller)


def case_signal_state(ctx):
    """A caller that ignores SIGINT/SIGHUP and blocks SIGTERM passes none of that to the kernel."""
    def careless_caller():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGUSR2})
    expect_held(ctx, ["/probes/signal_state"])
    expect_held(ctx, ["/probes/signal_state"], preexec=careless_caller)


def case_inherited_state(ctx):
    """A caller running without ASLR (setarch -R) or with READ_IMPLIES_EXEC passes neither to the
    kernel; nor an oom_score_adj of -1000 (checked only where the test may lower it)."""
    def no_aslr_caller():
        ctypes.CDLL(None).personality(0x0040000 | 0x0400000)
    expect_held(ctx, ["/probes/inherited_state"], preexec=no_aslr_caller)
    try:
        with open("/proc/self/oom_score_adj") as f:
            old = f.read().strip()
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("-1000")
    except OSError:
        log("note: cannot lower oom_score_adj here (no CAP_SYS_RESOURCE); that variant is not run")
        return
    try:
        expect_held(ctx, ["/probes/inherited_state"])
    finally:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write(old)


def case_host_ptys(ctx):
    """A host terminal (a pty the test opens) must not appear in the jail's /dev/pts."""
    master, slave = os.openpty()
    try:
        name = os.path.basename(os.ttyname(slave))
        expect_held(ctx, ["/probes/list_dirs", name, "/dev/pts"])
    finally:
        os.close(master)
        os.close(slave)


def case_credentials(ctx):
    expect_held(ctx, ["/probes/caps_probe"])


def hold_cmd():
    """A jailed command that stays alive until its stdin closes (so the test can inspect it)."""
    return ["/usr/bin/python3", "-c", "import sys; sys.stdout.write('up\\n'); sys.stdout.flush(); sys.stdin.read()"]


def host_ids_of(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return [int(x) for x in line.split()[1:]]
    return []


def case_host_uids(ctx):
    """Seen from the host, kernels are not root, and live jails started at the same moment all get
    different host uids (the uid-slot locks hold under a race)."""
    count = 6
    variant = list(ctx.variants().values())[0]
    runs = [None] * count

    def start(i):
        runs[i] = harness.Run(ctx, hold_cmd(), variant=variant, tag="uid", pipe=True)
    threads = [threading.Thread(target=start, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        uids = []
        for r in runs:
            check("up" in harness.read_until(r, "up", timeout=60), f"{r.name}: command is up")
            kpid = r.pid if ctx.nojail else (r.ready or {}).get("kernel_pid")
            check(isinstance(kpid, int), f"{r.name}: kernel_pid known ({kpid})")
            ids = host_ids_of(kpid, "Uid")
            gids = host_ids_of(kpid, "Gid")
            log(f"{r.name}: kernel pid {kpid} host uids {ids} gids {gids}, status host_uid {(r.ready or {}).get('host_uid')}")
            check(ids and all(u != 0 for u in ids) and gids and all(g != 0 for g in gids),
                  f"{r.name}: kernel's host uids {ids} / gids {gids} are not root")
            if not ctx.nojail:
                check((r.ready or {}).get("host_uid") == ids[0], f"{r.name}: host_uid in status = real host uid")
            uids.append(ids[0])
        check(len(set(uids)) == count, f"{count} concurrent jails have {len(set(uids))} distinct host uids: {uids}")
    finally:
        for r in runs:
            if r.proc.stdin:
                r.proc.stdin.close()
            r.kill()
            r.wait(60)
            r.proc.stdout.close()
    for r in runs:
        harness.expect_clean(r)


def case_cross_jail(ctx):
    """Kernel B cannot reach kernel A: sockets, loopback ports, /tmp, /dev/shm, SysV IPC, /proc."""
    tag = secrets.token_hex(4)
    port = 20000 + secrets.randbelow(30000)
    if ctx.nojail:
        # Bare, kernel A's SysV segment lands in the host's ipc namespace: remove it afterwards.
        ctx.cleanups.append(lambda: subprocess.run(["ipcrm", "-M", "0x5ec0de"], stderr=subprocess.DEVNULL))
        for d in ("/tmp", "/dev/shm"):
            ctx.cleanups.append(lambda d=d: os.path.exists(f"{d}/cross-{tag}") and os.unlink(f"{d}/cross-{tag}"))
    a = harness.Run(ctx, [PY, "/pyprobes/cross_server.py", tag, str(port)], pipe=True, tag="crossA")
    text = harness.read_until(a, "ready", timeout=60)
    check("ready" in text, "kernel A is up")
    a_pid = (a.ready or {}).get("kernel_pid", a.pid)
    rc, _, _ = run_probe(ctx, [PY, "/pyprobes/cross_client.py", tag, str(port), str(a_pid)], [])
    a.kill()
    a.wait(60)
    harness.drain(a)
    harness.expect_clean(a)
    check(rc == harness.HELD, f"kernel B reached nothing of kernel A (exit {rc})")


def secret_paths(ctx):
    """The pinned list of host secrets, as isolation/etc_secrets.cc has it (tests/unit pins it too)."""
    with open(os.path.join(ctx.src, "..", "..", "isolation", "etc_secrets.cc")) as f:
        text = f.read()
    table = text[text.index("kSecretPaths[]"):]
    return re.findall(r'^\s+"(/[^"]+)",', table[:table.index("};")], re.M)


def case_etc_secrets(ctx):
    """No host secret (shadow, ssh, ssl/private, machine-id, ...) enters a jail: not with the default
    policy, whose /usr link rule binds e.g. /etc/R and /etc/ssl/certs, and not when a policy or an
    option asks for one: those are refused (exit 125) before anything on the host is touched."""
    secrets_list = secret_paths(ctx)
    check(len(secrets_list) >= 30 and "/etc/shadow" in secrets_list and "/etc/ssl/private" in secrets_list,
          f"{len(secrets_list)} secret paths read from isolation/etc_secrets.cc")
    present = [p for p in secrets_list if os.path.lexists(p)]
    log(f"secret paths present on this host: {present}")
    # Targets of /usr symlinks into /etc that this host has (R's, if installed; ssl's always).
    linked = [t for t in ("/etc/ssl/certs", "/etc/ssl/openssl.cnf", "/etc/R/Renviron", "/etc/octaverc")
              if os.path.exists(t)]
    expect_held(ctx, [PY, "/pyprobes/etc_secrets_probe.py", *secrets_list, "--", *linked])
    if ctx.nojail:
        return
    before = {p: os.lstat(p) for p in present}
    policy = os.path.join(ctx.mkdir("secret-policy"), "policy.json")
    refused = [
        ("policy etc_binds /etc/ssh", {"etc_binds": ["/etc/ssh"]}, []),
        ("policy etc_binds /etc/ssl", {"etc_binds": ["/etc/ssl"]}, []),
        ("policy ro_binds /etc", {"ro_binds": ["/etc:/mnt/hostetc"]}, []),
        ("policy cache_binds /etc/shadow", {"cache_binds": ["/etc/shadow"]}, []),
        ("--ro-bind /etc/ssl/private", None, ["--ro-bind", "/etc/ssl/private:/mnt/k"]),
        ("--ro-bind /", None, ["--ro-bind", "/:/mnt/host"]),
        ("--bind-same /etc/ssh", None, ["--bind-same", "/etc/ssh"]),
        ("--workspace /etc/ssl/private", None, ["--workspace", "/etc/ssl/private"]),
    ]
    for what, doc, opts in refused:
        if doc is not None:
            with open(policy, "w") as f:
                json.dump(doc, f)
            opts = ["--policy", policy]
        run = harness.Run(ctx, ["/usr/bin/true"], opts=opts, tag="secret")
        rc = run.wait(60)
        out = run.output()
        log(out.rstrip())
        harness.expect_clean(run)
        check(rc == 125 and "host secrets are never bound" in out, f"{what}: refused with 125 (exit {rc})")
    for p, st in before.items():
        now = os.lstat(p)
        check((now.st_uid, now.st_gid, now.st_mode) == (st.st_uid, st.st_gid, st.st_mode),
              f"{p} kept its owner and mode")


def case_workspace_symlink(ctx):
    """--workspace / --bind-same paths that pass through a symlink (as a kernel can plant in its own
    workspace) must not make the root helper chown or bind the host dir the symlink points to."""
    base = ctx.mkdir("symtree")
    outside = os.path.join(base, "outside")
    victim = os.path.join(outside, "victim")
    os.makedirs(victim, mode=0o700)
    canary_path = os.path.join(victim, "k.json")
    with open(canary_path, "w") as f:
        f.write("root's file\n")
    os.chmod(canary_path, 0o600)
    ws = os.path.join(base, "ws")
    os.makedirs(ws)
    os.symlink(outside, os.path.join(ws, "link"))        # planted by a kernel in its workspace
    os.symlink(victim, os.path.join(ws, "direct"))
    for opt in ("--workspace", "--bind-same"):
        for via in ("link/victim", "direct"):
            path = os.path.join(ws, via)
            inside = "/workspace/k.json" if opt == "--workspace" else os.path.join(path, "k.json")
            run = harness.Run(ctx, ["/bin/cat", inside], opts=[opt, path], tag="sym")
            rc = run.wait(60)
            out = run.output()
            log(out.rstrip())
            harness.expect_clean(run)
            vst, cst = os.stat(victim), os.stat(canary_path)
            check(vst.st_uid == 0 and (vst.st_mode & 0o777) == 0o700,
                  f"{opt} {via}: host dir behind the symlink kept root 0700 (now {vst.st_uid} {oct(vst.st_mode & 0o777)})")
            check(cst.st_uid == 0, f"{opt} {via}: root's file behind the symlink kept its owner (now {cst.st_uid})")
            check("root's file" not in out and rc != 0, f"{opt} {via}: the jail refused the path (exit {rc})")
            os.chown(victim, 0, 0)
            os.chmod(victim, 0o700)
            os.chown(canary_path, 0, 0)


def case_workspace_shared_dir(ctx):
    """--workspace pointing at a shared root-owned dir (sticky, world-writable, other users' files:
    a /tmp look-alike) must not hand that dir to host uid 1000."""
    shared = ctx.mkdir("shared-tmp", 0o1777)
    other = os.path.join(shared, "someone-elses-file")
    with open(other, "w") as f:
        f.write("x\n")
    os.chown(other, 4242, 4242)
    run = harness.Run(ctx, ["/usr/bin/true"], opts=["--workspace", shared], tag="shared")
    rc = run.wait(60)
    log(run.output().rstrip())
    st = os.stat(shared)
    os.chown(shared, 0, 0)  # undo whatever happened before asserting
    os.chmod(shared, 0o1777)
    harness.expect_clean(run)
    check(st.st_uid == 0 and st.st_gid == 0, f"the shared dir stayed root-owned (was {st.st_uid}:{st.st_gid} after exit {rc})")


CASES = {
    "etc_secrets": case_etc_secrets,
    "workspace_shared_dir": case_workspace_shared_dir,
    "workspace_symlink": case_workspace_symlink,
    "vsock": simple("vsock_probe"),
    "privileged_syscalls": simple("privileged_syscalls"),
    "priority": lambda ctx: case_priority(ctx),
    "setuid_programs": simple("setuid_probe"),
    "stdio_reopen": case_stdio_reopen,
    "host_ptys": case_host_ptys,
    "inherited_state": case_inherited_state,
    "signal_state": case_signal_state,
    "sched_inherit": case_sched_inherit,
    "env_exact": case_env_exact,
    "cross_jail": case_cross_jail,
    "read_shadow": case_read_shadow,
    "read_root_home": case_read_root_home,
    "read_repo": case_read_repo,
    "read_gateway_data": case_read_gateway_data,
    "write_outside": case_write_outside,
    "write_proc_sys": case_write_proc_sys,
    "write_run_cellgate": case_write_run_cellgate,
    "mknod": case_mknod,
    "mount": case_mount,
    "pivot_chroot_umount": case_pivot_chroot_umount,
    "ptrace": case_ptrace,
    "ps_view": case_ps_view,
    "kill_host": case_kill_host,
    "proc_root": case_proc_root,
    "setns": case_setns,
    "nested_userns": case_nested_userns,
    "bpf": simple("bpf_probe"),
    "io_uring": simple("io_uring_probe"),
    "keyring": simple("keyring_probe"),
    "perf_event_open": simple("perf_probe"),
    "tiocsti": lambda ctx: case_tiocsti(ctx),
    "open_by_handle_at": case_open_by_handle_at,
    "userfaultfd": simple("userfaultfd_probe"),
    "personality": simple("personality_probe"),
    # One case per 32-bit door, so each is proven (bare) or skipped on its own.
    "compat_syscall_i386": lambda ctx: expect_held(ctx, ["/probes/compat_syscall", "i386"]),
    "compat_syscall_x32": lambda ctx: expect_held(ctx, ["/probes/compat_syscall", "x32"]),
    "tcp_host_loopback": case_tcp_host_loopback,
    "outbound_net": case_outbound_net,
    "abstract_unix": case_abstract_unix,
    "environ": case_environ,
    "init_cmdline": case_init_cmdline,
    "leaked_fds": case_leaked_fds,
    "credentials": case_credentials,
    "host_uids": case_host_uids,
}
for _ns in NS_TYPES:
    CASES[f"unshare_{_ns}"] = make_unshare_case(_ns)

if __name__ == "__main__":
    harness.main(CASES)
