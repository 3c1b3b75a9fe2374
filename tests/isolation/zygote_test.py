#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""zygote_test: kernels from the fork server (cellgate-zygote) behave like cold jailed kernels.

usage: zygote_test.py CASE   (CELLGATE_JAIL and CELLGATE_ZYGOTE name the binaries; root; exit 4 = skip)
Cases:
  jailed_like_cold   the same probe in a cold and a forked kernel: identical jail (uid, caps, seccomp,
                     no_new_privs, pid namespace, mounts, network, read-only root, cgroup, env, rlimits),
                     and the host sees the forked kernel under an unprivileged slot uid
  matplotlib_inline  figures show inline (image/png) as in a cold kernel: plt.show(), open figures, %matplotlib
  shell_like_cold    a forked kernel adopts the shell the zygote built, and that shell is the cold kernel's:
                     dirs, history (file, thread, In/Out), environment, sys hooks, magics, user namespace
  shell_config       with an IPython config file the forked kernel builds its own shell, and the config holds
  reseeded           two forked kernels draw different numpy and `random` numbers
  zygote_untouched   what a kernel does (state, files, kill attempts, a big allocation) never reaches the
                     zygote or the next kernel
  no_request_residue a kernel's memory (a copy of the zygote's) holds nothing of an earlier request
  interrupt          SIGINT to the helper interrupts a running cell with KeyboardInterrupt
  outlives_zygote    a forked kernel keeps working after the zygote is killed
  refuses            requests that are not a jailed ipykernel fail before any jail is built
  huge_pages         the zygote's image sits in 2 MiB pages (not with --huge-pages off); a kernel that churns
                     through Python objects works and splits only its own mappings
"""
import contextlib
import errno
import hashlib
import json
import os
import select
import signal
import sys
import time

import zygote_kernel as zk

PROBE = r"""
import os, resource, socket
_st = {l.split(':')[0]: l.split(':', 1)[1].strip() for l in open('/proc/self/status')}
def _write(p):
    try:
        open(p, 'w').close()
        return 'written'
    except OSError as e:
        return e.errno
def _net():
    # TEST-NET-1 (RFC 5737): ENETUNREACH is the kernel refusing at once for want of a route, before
    # any packet leaves; anything else (EINPROGRESS) means a packet could.
    s = socket.socket()
    s.setblocking(False)
    try:
        return s.connect_ex(('192.0.2.1', 53))
    finally:
        s.close()
_info = {
    'uid': os.getresuid(), 'gid': os.getresgid(), 'groups': os.getgroups(), 'pid': os.getpid(),
    'ppid': os.getppid(), 'sid_is_pid': os.getsid(0) == os.getpid(),
    'caps': [_st[k] for k in ('CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb')],
    'seccomp': _st['Seccomp'], 'no_new_privs': _st['NoNewPrivs'],
    'hostname': socket.gethostname(), 'cwd': os.getcwd(), 'ifaces': sorted(n for _, n in socket.if_nameindex()),
    'net': _net(), 'usr_write': _write('/usr/cg-probe'), 'etc_write': _write('/etc/cg-probe'),
    'ws_write': _write('/workspace/cg-probe'),
    'cgroup': open('/proc/self/cgroup').read(),
    'mounts': sorted((l.split()[4], l.split(' - ')[1].split()[0]) for l in open('/proc/self/mountinfo')),
    'uid_map_count': open('/proc/self/uid_map').read().split()[2],
    'uid_map_base_unprivileged': int(open('/proc/self/uid_map').read().split()[1]) >= 100000,
    'env': sorted(k for k in os.environ if not k.startswith(('JPY_', 'PYDEVD'))),
    'rlimits': [resource.getrlimit(r) for r in (resource.RLIMIT_NOFILE, resource.RLIMIT_FSIZE, resource.RLIMIT_CORE, resource.RLIMIT_NPROC)],
    'umask': os.umask(0o22), 'procs': sorted(int(p) for p in os.listdir('/proc') if p.isdigit()),
    'cmdline': open('/proc/self/cmdline').read().replace('\0', ' ').split()[:3],
    'own_proc_files': os.stat('/proc/self/mem').st_uid == os.getuid(),
    'init_cmdline': open('/proc/1/cmdline').read().replace('\0', ' ').strip(),
}
"""


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print(f"ok: {what}", flush=True)


def host_uid(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Uid:"):
                return [int(x) for x in line.split()[1:]]
    return None


@contextlib.contextmanager
def cold_and_forked(jail, zygote):
    """A cold and a forked jailed kernel side by side, both stopped at the end (also when the second fails to start)."""
    cold = zk.Kernel(jail)
    try:
        forked = zk.Kernel(jail, zygote)
    except BaseException:
        cold.stop()
        raise
    try:
        yield cold, forked
    finally:
        cold.stop()
        forked.stop()


def case_jailed_like_cold(jail, zygote):
    with cold_and_forked(jail, zygote) as (cold, forked):
        infos = []
        for k in (cold, forked):
            status, _, ename = k.execute(PROBE)
            check(status == "ok", f"probe ran ({ename})")
            infos.append(json.loads(json.dumps(k.value("_info")).replace(k.kid, "KID")))
        c, z = infos
        for key in sorted(c):
            check(c[key] == z[key], f"{key}: forked {z[key]!r} == cold {c[key]!r}")
        check(z["uid"] == [1000] * 3 and z["gid"] == [1000] * 3, "uid/gid 1000 inside")
        check(z["caps"] == ["0000000000000000"] * 5, "no capabilities at all")
        check(z["seccomp"] == "2" and z["no_new_privs"] == "1", "seccomp filter mode 2, no_new_privs")
        check(z["pid"] == 2 and z["ppid"] == 1, "pid 2 under the jail's init")
        check(z["ifaces"] == ["lo"] and z["net"] == errno.ENETUNREACH, f"no network but loopback (connect: {z['net']})")
        check(z["usr_write"] != "written" and z["etc_write"] != "written", "read-only root")
        check(z["uid_map_base_unprivileged"], "uid 0 inside maps to an unprivileged host uid")
        kpid = forked.status["kernel_pid"]
        check(host_uid(kpid) == [forked.status["host_uid"]] * 4 and forked.status["host_uid"] >= 100000,
              f"host sees the kernel as uid {forked.status['host_uid']}")
        with open(f"/proc/{forked.helper}/cmdline", "rb") as f:
            check(forked.kid.encode() in f.read(), "the helper's cmdline names the kernel (re-adoption check)")


SHELL_PROBE = r"""
import os, sys, threading
_sh = get_ipython()
_hm = _sh.history_manager
_z = sys.modules.get('_cellgate_zygote')
_shell_info = {
    'adopted': _z is not None and getattr(_z, '_cellgate_shell', None) is _sh,
    'main_is_user_module': sys.modules['__main__'] is _sh.user_module,
    'dirs': [_sh.ipython_dir, _sh.profile_dir.location, str(_sh.db.root), _sh.starting_dir, _sh.home_dir,
             _sh.logger.home_dir, [str(p) for p in _sh.user_ns['_dh']]],
    'history': [str(_hm.hist_file), _hm.enabled, type(_hm.db).__name__, _hm.save_thread is not None and _hm.save_thread.is_alive(),
                _sh.user_ns['In'] is _hm.input_hist_parsed, _sh.user_ns['Out'] is _hm.output_hist, _sh.user_ns['_dh'] is _hm.dir_hist,
                _hm in _sh.configurables, os.path.exists(_hm.hist_file)],
    'env': [os.environ.get(k) for k in ('TERM', 'CLICOLOR', 'PAGER', 'GIT_PAGER')],
    'links': [_sh.parent is _sh.kernel, _sh.config is _sh.kernel.config, _sh.log is _sh.kernel.log,
              type(_sh.compile).__name__, _sh.displayhook.session is _sh.kernel.session,
              type(_sh._orig_sys_module_state['stdout']).__name__, _sh.stdin_encoding,
              getattr(_sh.sys_excepthook, '__qualname__', repr(_sh.sys_excepthook))],
    'configurables': [type(c).__name__ for c in _sh.configurables],
    'magics': {k: sorted(v) for k, v in _sh.magics_manager.magics.items()},
    'events': {k: len(v) for k, v in _sh.events.callbacks.items()},
    'hidden': sorted(_sh.user_ns_hidden),
    # threading numbers unnamed threads from a process-wide counter; how many threads a start made
    # and let go before this cell is not shell state, so only the targets are compared.
    'threads': sorted(__import__('re').sub(r'^Thread-[0-9]+', 'Thread', t.name) for t in threading.enumerate()),
}
"""
# The first cell makes a cold kernel register matplotlib_inline's hooks (a forked one has them from its start).
# The rest use the shell's pickleshare db (%store), script magics, system calls and the namespace.
HISTORY_CELLS = ["import matplotlib.pyplot as plt; plt.close(plt.figure())", "x = 40", "x + 2", "%cd /tmp",
                 "print(len(In), Out[3], _ih[3], _dh[-1], _3)", "y = 5\n%store y\ndel y\n%store -r y\nprint(y)",
                 "%%bash\necho hi", "!echo bang", "names = %who_ls\nprint(names)",
                 "import sys; print(sys.modules['__main__'].__dict__ is get_ipython().user_ns)"]


def case_shell_like_cold(jail, zygote):
    with cold_and_forked(jail, zygote) as (cold, forked):
        infos = []
        for k in (cold, forked):
            outs = [k.execute(code) for code in HISTORY_CELLS]
            status, _, ename = k.execute(SHELL_PROBE)
            check(status == "ok", f"shell probe ran ({ename})")
            info = k.value("_shell_info")
            info["cells"] = outs
            info["history_cmd"] = k.execute("%history -n -l 4")[1]
            infos.append(info)
        c, z = infos
        check(z["adopted"] is True and c["adopted"] is False, "the forked kernel's shell is the zygote's, the cold one's is not")
        for key in sorted(c):
            if key != "adopted":
                check(c[key] == z[key], f"{key}: forked {z[key]!r} == cold {c[key]!r}")
        check(z["cells"][4] == ("ok", "6 42 x + 2 /tmp 42\n", None), f"In/Out/_dh work: {z['cells'][4]!r}")
        check(z["history"][3] is True and z["history"][8] is True, "a live history thread and a history file")
        check(all(d.startswith("/tmp/.ipython") or d in ("/workspace", "/tmp") for d in z["dirs"][:6]),
              f"the kernel's own dirs, none of the zygote's: {z['dirs']}")


def case_shell_config(jail, zygote):
    def config(k):
        k.env["IPYTHONDIR"] = k.runtime + "/ipython"
        profile = k.runtime + "/ipython/profile_default"
        os.makedirs(profile)
        with open(profile + "/ipython_kernel_config.py", "w") as f:
            f.write("c.InteractiveShell.ast_node_interactivity = 'all'\n")
        # IPython takes a temp dir instead of an IPython dir it cannot write; the kernel's host uid (its
        # slot) is not known before the start.
        for d in (k.runtime + "/ipython", profile):
            os.chmod(d, 0o777)
    forked = zk.Kernel(jail, zygote, prepare=config)
    try:
        got = forked.value("[get_ipython().ast_node_interactivity, "
                           "getattr(__import__('sys').modules.get('_cellgate_zygote'), '_cellgate_shell', None) is get_ipython()]")
        check(got == ["all", False], f"the config file holds and the kernel built its own shell: {got}")
    finally:
        forked.stop()


def case_reseeded(jail, zygote):
    a, b = zk.Kernel(jail, zygote), zk.Kernel(jail, zygote)
    try:
        expr = "[__import__('numpy').random.rand(), __import__('random').random(), __import__('numpy').random.randint(1 << 30)]"
        va, vb = a.value(expr), b.value(expr)
        check(va[0] != vb[0] and va[2] != vb[2], f"numpy's global RNG differs: {va[0]} vs {vb[0]}")
        check(va[1] != vb[1], f"random differs: {va[1]} vs {vb[1]}")
    finally:
        a.stop()
        b.stop()


def proc_kib(path, key):
    """The kB figure of the line starting with key ("VmRSS:") in a /proc file; 0 when missing."""
    with open(path) as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1])
    return 0


def rss_kib(pid):
    return proc_kib(f"/proc/{pid}/status", "VmRSS:")


# Figures in a forked kernel come out as in a cold one: plt.show(), a figure left open at the end of
# a cell, `%matplotlib inline`; and the backend state a cell can see is the same.
FIGURE_CELLS = [
    "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()",
    "plt.figure()\nplt.plot([3, 4]);",
    "%matplotlib inline\nplt.plot([5, 6])\nplt.show()",
    "import matplotlib\nprint(matplotlib.get_backend(), matplotlib.is_interactive(), plt.get_fignums())",
]


def figure_outputs(k, code):
    """(status, stdout, mimetypes of each display_data/execute_result) of one cell."""
    out, shown = [], []

    def hook(msg):
        c = msg["content"]
        if msg["msg_type"] == "stream" and c["name"] == "stdout":
            out.append(c["text"])
        elif msg["msg_type"] in ("display_data", "execute_result"):
            shown.append((msg["msg_type"], sorted(c["data"])))
    reply = k.kc.execute_interactive(code, timeout=60, output_hook=hook)
    return reply["content"]["status"], "".join(out).strip(), shown


def case_matplotlib_inline(jail, zygote):
    with cold_and_forked(jail, zygote) as (cold, forked):
        for code in FIGURE_CELLS:
            c, z = figure_outputs(cold, code), figure_outputs(forked, code)
            check(z == c, f"forked {z!r} == cold {c!r} for {code.splitlines()[-1]!r}")
        for i in range(3):
            z = figure_outputs(forked, FIGURE_CELLS[i])
            check(z[0] == "ok" and ("display_data", ["image/png", "text/plain"]) in z[2],
                  f"forked kernel shows an image/png for cell {i}: {z!r}")


def case_zygote_untouched(jail, zygote):
    zpid = zygote.proc.pid
    before = rss_kib(zpid)
    a = zk.Kernel(jail, zygote)
    try:
        status, out, _ = a.execute(
            "import numpy, os, signal\n"
            "numpy.cellgate_mark = 1\n"
            "open('/tmp/cg-mark', 'w').write('x')\n"
            "big = bytearray(256 << 20)\n"
            f"try:\n    os.kill({zpid}, signal.SIGKILL)\nexcept OSError as e:\n    print('zygote', e.errno)\n"
            "try:\n    os.kill(os.getppid(), signal.SIGKILL)\nexcept OSError as e:\n    print('init', e.errno)\n"
            "print('done')\n")
        check(status == "ok" and "done" in out, f"kernel ran its mischief: {out.strip()!r}")
        check(a.alive(), "the kernel's jail is still there (its init ignores SIGKILL from inside)")
        check(zygote.proc.poll() is None, "the zygote is alive")
        after = rss_kib(zpid)
        check(after - before < 16 * 1024, f"zygote RSS unchanged by the kernel's 256 MiB ({before} -> {after} KiB)")
        b = zk.Kernel(jail, zygote)
        try:
            v = b.value("[hasattr(__import__('numpy'), 'cellgate_mark'), __import__('os').path.exists('/tmp/cg-mark'), 'big' in globals()]")
            check(v == [False, False, False], f"the next kernel sees none of it: {v}")
        finally:
            b.stop()
    finally:
        a.stop()


# Counts 32-hex-digit runs in the kernel's own writable memory whose SHA-256 is TARGET: the code
# carries only the hash, so the secret itself can only be found where something else put it (malloc
# overwrites the start of a freed chunk, so no fixed prefix around it can be relied on).
SCAN = r"""
import ctypes, hashlib, re
_target = bytes.fromhex('TARGET')
_hits = 0
with open('/proc/self/maps') as _maps:
    _regions = [_l.split()[:2] for _l in _maps]
for _range, _perms in _regions:
    if not _perms.startswith('rw'):
        continue
    _lo, _hi = (int(x, 16) for x in _range.split('-'))
    for _at in range(_lo, _hi, 1 << 20):
        _chunk = ctypes.string_at(_at, min((1 << 20) + 64, _hi - _at))
        for _m in re.finditer(rb'(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])', _chunk):
            _hits += hashlib.sha256(_m.group()).digest() == _target
print(_hits)
"""


def case_no_request_residue(jail, zygote):
    secret = os.urandom(16).hex()
    a = zk.Kernel(jail, zygote, env={"CG_SECRET": secret})
    try:
        check(a.value("__import__('os').environ['CG_SECRET']") == secret, "kernel A has its secret")
        scan = SCAN.replace("TARGET", hashlib.sha256(secret.encode()).hexdigest())
        status, out, _ = a.execute(scan)
        check(status == "ok" and int(out) >= 1, f"the scan finds the secret where it is (kernel A: {out.strip()})")
        b = zk.Kernel(jail, zygote)
        try:
            status, out, _ = b.execute(scan)
            check(status == "ok" and int(out) == 0,
                  f"kernel B, forked after A, holds nothing of A's request ({out.strip()} hits)")
        finally:
            b.stop()
    finally:
        a.stop()


def case_interrupt(jail, zygote):
    k = zk.Kernel(jail, zygote)
    try:
        kc = k.kc
        msg_id = kc.execute("import time\nprint('started', flush=True)\ntime.sleep(60)\n")
        t0 = time.monotonic()
        # Only once the cell runs: a SIGINT before that lands in ipykernel's event loop (its race, as
        # in kernel_conformance_test), not in the cell.
        while True:
            msg = kc.get_iopub_msg(timeout=60)
            if msg["msg_type"] == "stream" and "started" in msg["content"]["text"] \
                    and msg["parent_header"].get("msg_id") == msg_id:
                break
        os.kill(k.helper, signal.SIGINT)
        while True:
            reply = kc.get_shell_msg(timeout=30)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        status, ename = reply["content"]["status"], reply["content"].get("ename")
        check(status == "error" and ename == "KeyboardInterrupt", f"KeyboardInterrupt ({status}, {ename})")
        check(time.monotonic() - t0 < 50, "well before the sleep would end")
        for _ in range(20):  # ipykernel aborts requests that arrive right after an error
            if k.execute("print(1 + 1)")[0] != "aborted":
                break
            time.sleep(0.25)
        check(k.value("1 + 1") == 2, "the kernel still answers")
    finally:
        k.stop()


def case_outlives_zygote(jail, zygote):
    k = zk.Kernel(jail, zygote)
    try:
        zygote.proc.send_signal(signal.SIGKILL)
        zygote.proc.wait(timeout=30)
        time.sleep(0.5)
        check(k.alive(), "the helper survives the zygote")
        check(k.value("sum(range(10))") == 45, "the kernel still executes")
    finally:
        k.stop()


def case_refuses(jail, zygote):
    # Decoded in the forked child (the zygote keeps no request in its memory): the jail fails at
    # "options" before anything is built, as cellgate-jail does for bad options.
    for command in (["/bin/sh", "-c", "id"], ["/usr/bin/python3", "-c", "print(1)"],
                    ["/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "rel.json", "--extra"]):
        k = None
        try:
            k = zk.Kernel(jail, zygote, command=command)
        except RuntimeError as e:
            check("'stage': 'options'" in str(e) and "fork server" in str(e), f"refused {command[0]} {command[1]}: {e}")
        else:
            k.stop()
            raise AssertionError(f"the zygote ran {command}")
    check(zygote.proc.poll() is None, "the zygote is still serving")


def anon_huge_kib(pid):
    return proc_kib(f"/proc/{pid}/smaps_rollup", "AnonHugePages:")


# Through pymalloc's arenas: millions of small objects made and dropped, the preloaded ones' too.
CHURN = r"""
import gc, sys
_total = 0
for _round in range(3):
    _objs = [(str(_i), _i * 2.5, [_i]) for _i in range(400_000)]
    _total += sum(len(_o[0]) for _o in _objs)
    del _objs
    gc.collect()
_dropped = [m for m in list(sys.modules) if m.startswith('pandas.io.formats')]
for _m in _dropped:
    del sys.modules[_m]
gc.collect()
print(_total, len(_dropped) > 0)
"""


def case_huge_pages(jail, zygote):
    if not os.path.exists("/sys/kernel/mm/transparent_hugepage/enabled"):
        print("SKIP: this kernel has no transparent huge pages", flush=True)
        sys.exit(zk.SKIP_RC)
    if "(MADV_COLLAPSE: Invalid argument)" in zygote.log():
        # madvise(2): EINVAL for MADV_COLLAPSE = a kernel before 6.1, or without transparent huge pages.
        print("SKIP: this kernel cannot collapse memory into huge pages (MADV_COLLAPSE: EINVAL)", flush=True)
        sys.exit(zk.SKIP_RC)
    zpid = zygote.proc.pid
    image = anon_huge_kib(zpid)
    check("image in huge pages" in zygote.log(), f"the zygote says where its image is: {zygote.log()[-600:]!r}")
    check(image >= 48 * 1024, f"most of the ~100 MiB image is in 2 MiB pages ({image} KiB)")
    k = zk.Kernel(jail, zygote)
    try:
        status, out, _ = k.execute(CHURN)
        expected = 3 * sum(len(str(i)) for i in range(400_000))
        check(status == "ok" and out.split() == [str(expected), "True"], f"the churn ran: {status} {out!r}")
        check(k.value("sum(range(10))") == 45 and k.alive(), "the kernel still answers")
        check(anon_huge_kib(zpid) == image, f"the kernel's writes split none of the zygote's pages ({image} -> {anon_huge_kib(zpid)} KiB)")
    finally:
        k.stop()
    off = zk.ZygoteServer(os.environ["CELLGATE_ZYGOTE"], "huge-off", args=("--huge-pages", "off"))
    try:
        k = zk.Kernel(jail, off)
        try:
            check(k.value("sum(range(10))") == 45, "a kernel of a zygote with --huge-pages off answers")
        finally:
            k.stop()
        check("huge pages" not in off.log(), f"--huge-pages off leaves the image alone: {off.log()[-600:]!r}")
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            always = "[always]" in f.read()
        check(always or anon_huge_kib(off.proc.pid) < image // 4,
              f"--huge-pages off: {anon_huge_kib(off.proc.pid)} KiB in huge pages, against {image}")
    finally:
        off.stop()


def maps_of(pid):
    with open(f"/proc/{pid}/maps") as f:
        return f.read().splitlines()


def wait_gone(pidfd, timeout):
    return bool(select.select([pidfd], [], [], timeout)[0])


def case_image_shed(jail, zygote):
    """The helper and init of a forked kernel drop the Python image once the kernel is forked (issue 26:
    ~0.4 MiB of page tables and ~1,500 mappings per jail), and still do their jobs afterwards: forward
    signals, report the kernel's exit status, clean up."""
    k = zk.Kernel(jail, zygote)
    try:
        check(k.value("sum(range(10))") == 45, "the kernel answers")
        helper, init, kernel = (k.status[r] for r in ("helper_pid", "init_pid", "kernel_pid"))
        time.sleep(0.5)  # the helper unmaps right after its ready line
        numpy = [line for line in maps_of(kernel) if "_multiarray_umath" in line]
        check(numpy, "the kernel maps numpy (preloaded)")
        for name, pid in (("helper", helper), ("init", init)):
            lines = maps_of(pid)
            check(not any("_multiarray_umath" in line or "matplotlib" in line for line in lines),
                  f"the {name} maps none of the preloaded libraries")
            check(len(lines) < len(maps_of(kernel)) // 4, f"the {name} has {len(lines)} mappings, the kernel {len(maps_of(kernel))}")
        check(k.value("__import__('numpy').arange(4).sum().item()") == 6, "numpy still works in the kernel")
        os.kill(helper, signal.SIGINT)  # forwarded by helper and init to the idle kernel: harmless
        time.sleep(0.3)
        check(k.value("1 + 1") == 2 and k.alive(), "signals pass through helper and init after the drop")
        k.kc.execute("import os; os._exit(7)")
        check(wait_gone(k.pidfd, 30), "the jail ends with its kernel")
        with open(k.private + "/jail.json") as f:
            status = json.load(f)
        check(status.get("state") == "exited" and status.get("exit_code") == 7,
              f"init reports the kernel's exit status to the helper: {status}")
    finally:
        k.stop()
    off = zk.ZygoteServer(os.environ["CELLGATE_ZYGOTE"], "shed-off", args=("--shed-image", "off"))
    try:
        k = zk.Kernel(jail, off)
        try:
            time.sleep(0.5)
            check(any("_multiarray_umath" in line for line in maps_of(k.status["helper_pid"])),
                  "--shed-image off: the helper keeps the image")
        finally:
            k.stop()
    finally:
        off.stop()


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print(__doc__, file=sys.stderr)
        return 2
    jail, zygote_bin = zk.require_or_skip()
    zygote = zk.ZygoteServer(zygote_bin, sys.argv[1])
    try:
        CASES[sys.argv[1]](jail, zygote)
    except AssertionError as e:
        print(f"FAIL: {e}\nzygote log:\n{zygote.log()}", flush=True)
        return 1
    finally:
        zygote.stop()
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
