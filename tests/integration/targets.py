# SPDX-License-Identifier: Apache-2.0
# Servers under test: start/stop `cellgate serve` or Debian's `jupyter server`, and talk REST to them.
"""A Target is a running server that speaks the Jupyter kernels REST + WebSocket API.

Both kinds listen on 127.0.0.1 only, use token auth and private temp directories, and see an
extra kernelspec `cgtest` (with a logo, kernel.js and a spec env var) besides Debian's python3.
Used by the integration tests (conftest.py) and by bench/gateway/gateway_bench.py.
"""
import ctypes
import glob
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
import weakref
import zlib

import requests

PYTHON = "/usr/bin/python3"
SECRET_NAME, SECRET_VALUE = "CELLGATE_TEST_SECRET", "s3cret"
URL_LINE = re.compile(r"^cellgate serving at (https?://[^?\s]+)\?token=(\S+)\s*$")
TEST_SPEC = "cgtest"
SPEC_ENV = ("CGTEST_SPEC_ENV", "from-spec")


# CELLGATE_TEST_DATABASE=postgres (ctest label postgres): every CellgateTarget gets a fresh database on
# the run's PostgreSQL server (tests/postgres/pg_server.py, URL in CELLGATE_TEST_PG_URL_FILE), passed
# to `cellgate serve` and `cellgate user` as --database, and dropped when the target stops.
def postgres_backend():
    return os.environ.get("CELLGATE_TEST_DATABASE") == "postgres"


def _pg_admin(sql):
    import psycopg2
    with open(os.environ["CELLGATE_TEST_PG_URL_FILE"]) as f:
        url = f.read().strip()
    con = psycopg2.connect(url)
    try:
        con.autocommit = True
        with con.cursor() as cur:
            cur.execute(sql)
    finally:
        con.close()
    return url


def create_pg_database():
    """A new database on the run's server (with an ICU collation, as a real server would have): its URL."""
    name = "cgit_%d_%s" % (os.getpid(), os.urandom(4).hex())
    url = _pg_admin("CREATE DATABASE %s TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C.UTF-8' "
                    "LOCALE_PROVIDER icu ICU_LOCALE 'en-US'" % name)
    head, _, query = url.partition("?")
    return head.rsplit("/", 1)[0] + "/" + name + ("?" + query if query else "")


def drop_pg_database(url):
    name = url.partition("?")[0].rsplit("/", 1)[1]
    _pg_admin("DROP DATABASE IF EXISTS %s WITH (FORCE)" % name)


def _die_with_parent():
    """preexec_fn: PR_SET_PDEATHSIG(SIGTERM) (prctl(2)); runs in the child before exec."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _png_1x1():
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))
    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)
    idat = zlib.compress(b"\x00\xff\x00\x00\xff")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


LOGO_BYTES = _png_1x1()
KERNEL_JS = b"// cellgate test kernel.js\ndefine(function () { return {onload: function () {}}; });\n"


def write_test_kernelspec(kernels_dir):
    """kernels_dir/cgtest/{kernel.json, logo-64x64.png, kernel.js}."""
    d = os.path.join(kernels_dir, TEST_SPEC)
    os.makedirs(d, exist_ok=True)
    import json
    with open(os.path.join(d, "kernel.json"), "w") as f:
        json.dump({"argv": [PYTHON, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                   "display_name": "cellgate test kernel", "language": "python",
                   "env": {SPEC_ENV[0]: SPEC_ENV[1]}, "metadata": {"debugger": False}}, f)
    with open(os.path.join(d, "logo-64x64.png"), "wb") as f:
        f.write(LOGO_BYTES)
    with open(os.path.join(d, "kernel.js"), "wb") as f:
        f.write(KERNEL_JS)
    return d


# A killed test (a ctest TIMEOUT sends SIGKILL) never reaches stop(), and its temp dir, with a data
# dir, kernels' logs and a workspace volume, stayed in /tmp until the disk filled. Each dir names
# its owner (pid and start time, which a reused pid does not share); a new Target removes the dirs
# of owners that are gone, after detaching what is mounted under them so that rmtree never walks
# into a mount. Dirs of live owners (other worktrees' runs) are left alone.
OWNER_FILE = "owner"


def _start_time(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def claim_dir(path):
    with open(os.path.join(path, OWNER_FILE), "w") as f:
        f.write("%d %s\n" % (os.getpid(), _start_time(os.getpid())))


def sweep_stale_dirs(pattern):
    for d in glob.glob(pattern):
        try:
            with open(os.path.join(d, OWNER_FILE)) as f:
                pid, start = f.read().split()
        except (OSError, ValueError):
            continue  # not made by claim_dir, or being made now
        if _start_time(int(pid)) == start:
            continue
        with open("/proc/self/mountinfo") as f:
            mounts = [line.split()[4] for line in f]
        for m in sorted((m for m in mounts if m.startswith(d + "/")), key=len, reverse=True):
            subprocess.run(["umount", "-l", m], stderr=subprocess.DEVNULL, check=False)
        shutil.rmtree(d, ignore_errors=True)


class Target:
    """A running server. url ends with '/', e.g. http://127.0.0.1:PORT/."""

    name = "?"
    # Status for a request without (or with a wrong) token. jupyter_server's APIHandler answers
    # 403 (its get_current_user override); cellgate's contract says 401.
    unauth_status = 401
    is_cellgate = False
    # Every target made: a failing test's report shows their logs (conftest.pytest_runtest_makereport).
    made = weakref.WeakSet()

    def __init__(self, token="cellgate-test-token", extra_args=()):
        Target.made.add(self)
        self.token = token
        self.extra_args = list(extra_args)
        sweep_stale_dirs(os.path.join(tempfile.gettempdir(), "cgclients-it-*"))
        self.tmp = tempfile.mkdtemp(prefix="cgclients-it-")
        claim_dir(self.tmp)
        self.jpath = os.path.join(self.tmp, "jpath")
        self.kernels_dir = os.path.join(self.jpath, "kernels")
        write_test_kernelspec(self.kernels_dir)
        self.proc = None
        self.url = None
        self.log_path = os.path.join(self.tmp, "server.log")
        self.http = requests.Session()
        self.http.headers["Authorization"] = "token " + token

    # -- REST helpers
    def api(self, method, path, **kw):
        if self.proc is not None and self.proc.poll() is not None:
            raise RuntimeError("%s died (rc=%s):\n%s" % (self.name, self.proc.returncode,
                                                        self.log_tail()))
        kw.setdefault("timeout", 90)
        return self.http.request(method, self.url + path.lstrip("/"), **kw)

    def get(self, path, **kw):
        return self.api("GET", path, **kw)

    def post(self, path, **kw):
        return self.api("POST", path, **kw)

    def start_kernel(self, name=None, env=None, expect=201):
        body = {}
        if name:
            body["name"] = name
        if env is not None:
            body["env"] = env
        r = self.post("api/kernels", json=body)
        assert r.status_code == expect, (r.status_code, r.text, self.log_tail(200))
        return r.json()

    def delete_kernel(self, kernel_id):
        return self.api("DELETE", "api/kernels/" + kernel_id)

    def log_tail(self, n=60):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def base_env(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("CELLGATE_")}
        env[SECRET_NAME] = SECRET_VALUE
        env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
        return env

    # -- lifecycle
    def start(self):
        raise NotImplementedError

    def _popen(self, cmd, **kw):
        # The server gets SIGTERM if the test process dies (e.g. killed by a ctest TIMEOUT).
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, start_new_session=True,
                                preexec_fn=_die_with_parent, **kw)

    def _kill_leftovers(self):
        """Kill processes of this server that outlived it (kernels of a crashed gateway): its
        process group, and any process whose command line names this target's temp dir."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        me = os.getpid()
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    if self.tmp.encode() in f.read() and int(pid) != me:
                        os.kill(int(pid), signal.SIGKILL)
            except (OSError, ValueError):
                pass

    def _wait_http(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited with %s:\n%s" % (self.name, self.proc.returncode,
                                                                self.log_tail()))
            try:
                if self.get("api/kernelspecs", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.2)
        raise RuntimeError("%s not answering after %ss:\n%s" % (self.name, timeout, self.log_tail()))

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None and self.url:
            try:  # tests DELETE their kernels; this catches the ones a failed test left behind
                for k in self.get("api/kernels", timeout=10).json():
                    self.delete_kernel(k["id"])
            except Exception:
                pass
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._kill_leftovers()
        self.proc = None
        if os.environ.get("CELLGATE_TEST_KEEP_TMP") != "1":
            shutil.rmtree(self.tmp, ignore_errors=True)
            if getattr(self, "database", None):
                try:
                    drop_pg_database(self.database)
                except Exception:
                    pass  # the fixture's stop removes the whole server anyway
                self.database = None


# A jupyter_server_config.py that sets TCP_NODELAY on kernel WebSockets (tornado leaves Nagle on,
# so a reply split over several small writes waits for the client's delayed ACK).
NODELAY_CONFIG = """
from jupyter_server.services.kernels.handlers import ZMQChannelsHandler
_cg_open = ZMQChannelsHandler.open
def _cg_open_nodelay(self, *args, **kwargs):
    self.set_nodelay(True)
    return _cg_open(self, *args, **kwargs)
ZMQChannelsHandler.open = _cg_open_nodelay
"""


class JupyterServerTarget(Target):
    name = "jupyter_server"
    unauth_status = 403

    def __init__(self, config_py=None, **kw):
        super().__init__(**kw)
        self.config_py = config_py

    def start(self, timeout=90):
        port = free_port()
        root = os.path.join(self.tmp, "root")
        os.makedirs(root)
        if self.config_py:
            os.makedirs(os.path.join(self.tmp, "config"))
            with open(os.path.join(self.tmp, "config", "jupyter_server_config.py"), "w") as f:
                f.write(self.config_py)
        env = self.base_env()
        env.update(JUPYTER_PATH=self.jpath, JUPYTER_CONFIG_DIR=os.path.join(self.tmp, "config"),
                   JUPYTER_RUNTIME_DIR=os.path.join(self.tmp, "runtime"))
        cmd = [PYTHON, "-m", "jupyter_server", "--ServerApp.ip=127.0.0.1",
               "--ServerApp.port=%d" % port, "--ServerApp.port_retries=0",
               "--ServerApp.token=" + self.token, "--ServerApp.password=",
               "--ServerApp.open_browser=False", "--ServerApp.allow_root=True",
               "--ServerApp.root_dir=" + root] + self.extra_args
        self.log = open(self.log_path, "wb")
        self.proc = self._popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        self.url = "http://127.0.0.1:%d/" % port
        self._wait_http(timeout)
        return self


class CellgateTarget(Target):
    name = "cellgate"
    unauth_status = 401
    is_cellgate = True

    def __init__(self, binary, spawner="plain", pre_start=None, tls=None, **kw):
        super().__init__(**kw)
        # tls: (certfile, keyfile): serve HTTPS; REST calls verify against certfile as the CA.
        self.tls = tls
        if tls:
            self.extra_args += ["--certfile", tls[0], "--keyfile", tls[1]]
            self.http.verify = tls[0]
            # Otherwise REQUESTS_CA_BUNDLE in the environment silently replaces verify.
            self.http.trust_env = False
        self.binary = binary
        self.spawner = spawner
        # Every data dir of a test gets its own workspace volume (as root, the default): a small sparse
        # one, unmounted and detached when the target stops (unmount_workspace_volume).
        if "--workspace-volume-size" not in self.extra_args and serve_knows(binary, "workspace-volume-size"):
            self.extra_args += ["--workspace-volume-size", "1G"]
        self.data_dir = os.path.join(self.tmp, "data")
        self.run_dir = os.path.join(self.tmp, "run")
        # pre_start(target) runs before the first start, e.g. `cellgate user add` on data_dir.
        self.pre_start = pre_start
        # --database for serve and the CLI: None = SQLite in data_dir (see postgres_backend()).
        self.database = create_pg_database() if postgres_backend() else None

    def _kill_leftovers(self):
        super()._kill_leftovers()
        self._release_cgroups()
        self.unmount_workspace_volume()

    def unmount_workspace_volume(self):
        """The gateway unmounts its workspace volume (<data>/workspaces, a loop-mounted image) when it
        stops without kernels; after a crash, or with kernels killed above, it is still mounted: unmount
        it, and detach its loop device (which detaches itself with the last mount, unless a dying jail
        still holds one), before the temp dir goes."""
        path = os.path.realpath(os.path.join(self.data_dir, "workspaces"))
        image = os.path.realpath(os.path.join(self.data_dir, "workspaces.img"))
        for _ in range(50):
            with open("/proc/self/mountinfo") as f:
                mounted = any(line.split()[4] == path for line in f)
            if mounted:
                subprocess.run(["umount", path], capture_output=True)
                continue
            devices = loop_devices_of(image)
            if not devices:
                return
            for dev in devices:
                subprocess.run(["losetup", "-d", dev], capture_output=True)
            time.sleep(0.2)
        raise RuntimeError("the workspace volume %s is still mounted or attached" % image)

    def _release_cgroups(self):
        """Jails whose helpers were SIGKILLed above cannot remove their cgroups, and the gateway that
        would have is gone: thaw (a v1-frozen task cannot even die), kill and remove them here."""
        names = set()
        for status in glob.glob(os.path.join(self.run_dir, "s", "*", "jail.json")):
            try:
                with open(status) as f:
                    names.add(os.path.basename(json.load(f)["cgroup"]))
            except (OSError, ValueError, KeyError, TypeError):
                pass
        # cellgate/<name> or cellgate/<owner>/<name> (each user's kernels under an owner level)
        dirs = [d for n in names if n for mid in ("", "*/") for d in glob.glob("/sys/fs/cgroup/*/cellgate/" + mid + n) +
                glob.glob("/sys/fs/cgroup/cellgate/" + mid + n)]
        owners = {os.path.dirname(d) for d in dirs if os.path.basename(os.path.dirname(d)) != "cellgate"}
        for d in dirs:
            for name, value in (("freezer.state", "THAWED"), ("cgroup.freeze", "0"), ("cgroup.kill", "1")):
                try:
                    with open(os.path.join(d, name), "w") as f:
                        f.write(value)
                except OSError:
                    pass
        deadline = time.monotonic() + 5
        while dirs and time.monotonic() < deadline:
            for d in list(dirs):
                try:
                    os.rmdir(d)
                    dirs.remove(d)
                except FileNotFoundError:
                    dirs.remove(d)
                except OSError:
                    pass
            time.sleep(0.05)
        for d in owners:  # those the last of them left (another gateway's jails keep theirs: EBUSY)
            try:
                os.rmdir(d)
            except OSError:
                pass

    def database_args(self):
        return ["--database", self.database] if self.database else []

    def db_query(self, sql, *args):
        """Runs sql (`?` parameters) on the gateway's state database, whichever backend; returns the rows."""
        if self.database:
            import psycopg2
            con = psycopg2.connect(self.database)
            try:
                with con, con.cursor() as cur:
                    cur.execute(sql.replace("?", "%s"), args)
                    return cur.fetchall() if cur.description else []
            finally:
                con.close()
        import sqlite3
        con = sqlite3.connect(os.path.join(self.data_dir, "cellgate.db"), timeout=30)
        try:
            with con:
                return con.execute(sql, args).fetchall()
        finally:
            con.close()

    def cli(self, *args):
        """Run `cellgate ARGS --data-dir DATA [--database URL]`; returns its stdout (raises on failure)."""
        out = subprocess.run([self.binary, *args, "--data-dir", self.data_dir, *self.database_args()],
                             capture_output=True, timeout=60, env=self.base_env())
        if out.returncode != 0:
            raise RuntimeError("cellgate %s failed (rc=%d): %s"
                               % (" ".join(args), out.returncode, out.stderr.decode(errors="replace")))
        return out.stdout.decode()

    def jail_status(self, kernel_id):
        """The jail helper's status file of a kernel (init_pid, kernel_pid, host_uid, cgroup...)."""
        with open(os.path.join(self.run_dir, "s", kernel_id, "jail.json")) as f:
            return json.load(f)

    def wait_paused(self, kernel_id, want=True, timeout=30):
        """Polls the kernel's model until its `paused` is want; returns that model."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r = self.get("api/kernels/" + kernel_id)
            assert r.status_code == 200, (r.status_code, r.text)
            m = r.json()
            if m.get("paused") is want:
                return m
            time.sleep(0.2)
        raise AssertionError("kernel %s never got paused=%s: %s\n%s" % (kernel_id, want, m, self.log_tail()))

    def start_paused_kernel(self, code, timeout=30):
        """A new kernel that ran code (over its WebSocket) and then paused, idle: its id."""
        from jupyter_ws import KernelWS
        kid = self.start_kernel()["id"]
        kws = KernelWS(self.url, self.token, kid)
        try:
            assert kws.execute(code).reply["content"]["status"] == "ok"
        finally:
            kws.close()
        self.wait_paused(kid, timeout=timeout)
        return kid

    def add_user(self, name, *flags):
        """`cellgate user add NAME FLAGS`: returns the token it prints (its first stdout line)."""
        return self.cli("user", "add", name, *flags).strip().splitlines()[0].strip()

    def kill_gateway(self, timeout=30):
        """SIGKILL the gateway alone, as in a crash: no cleanup at all (kernels, data and temp dir stay)."""
        self.proc.kill()
        self.proc.wait(timeout)
        self.proc = None
        self.url = None

    def terminate_gateway(self, timeout=30):
        """SIGTERM the gateway alone (kernels, data and temp dir stay) and wait for it to exit."""
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout)
        self.proc = None
        self.url = None

    def start(self, timeout=60):
        env = self.base_env()
        data, run = self.data_dir, self.run_dir
        if self.pre_start is not None and not os.path.exists(run):
            self.pre_start(self)
        os.makedirs(run, exist_ok=True)
        # A test that gives --token-file keeps the token off the command line.
        token_args = [] if "--token-file" in self.extra_args else ["--token", self.token]
        cmd = [self.binary, "serve", "--port", "0", *token_args, "--data-dir", data,
               "--runtime-dir", run, "--spawner", self.spawner,
               "--kernelspec-dir", self.kernels_dir] + self.database_args() + self.extra_args
        self.log = open(self.log_path, "wb")
        self.proc = self._popen(cmd, stdout=subprocess.PIPE, stderr=self.log, env=env)
        got = {}

        def read_stdout():
            for raw in self.proc.stdout:
                line = raw.decode("utf-8", "replace")
                if "url" not in got:
                    got["line"] = line
                    m = URL_LINE.match(line)
                    got["url"] = m.group(1) if m else None
                    got["token"] = m.group(2) if m else None
        reader = threading.Thread(target=read_stdout, daemon=True)
        reader.start()
        deadline = time.monotonic() + timeout
        while "url" not in got:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                rc, tail = self.proc.poll(), self.log_tail()
                self.stop()
                raise RuntimeError("cellgate printed no URL line (rc=%s):\n%s" % (rc, tail))
            time.sleep(0.05)
        if not got["url"]:
            raise RuntimeError("cellgate's first stdout line is not the URL line: %r" % got["line"])
        if got["token"] != self.token:
            raise RuntimeError("URL line token %r != --token %r" % (got["token"], self.token))
        self.url = got["url"] if got["url"].endswith("/") else got["url"] + "/"
        self._wait_http(timeout)
        return self


def loop_devices_of(image):
    """The loop devices whose backing file is image (loop(4), /sys/block/loopN/loop/backing_file)."""
    found = []
    for name in os.listdir("/sys/block"):
        try:
            with open("/sys/block/%s/loop/backing_file" % name) as f:
                if f.read().rstrip("\n") in (image, image + " (deleted)"):
                    found.append("/dev/" + name)
        except OSError:
            pass
    return found


_serve_help = {}


def serve_knows(binary, flag):
    """Whether this `cellgate serve` takes --flag (so that a test can run against an older binary)."""
    if binary not in _serve_help:
        _serve_help[binary] = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True,
                                             timeout=30).stdout
    return ("--%s " % flag) in _serve_help[binary]


def cellgate_binary():
    """(path or None, reason). CELLGATE_BIN must name an existing executable."""
    path = os.environ.get("CELLGATE_BIN")
    if not path:
        return None, "CELLGATE_BIN not set"
    if not os.access(path, os.X_OK):
        return None, "CELLGATE_BIN=%s is not an executable file" % path
    return path, ""


class TokenClient:
    """A REST client holding one user's token: what each user of a multi-user test drives."""

    def __init__(self, target, name, token):
        self.target, self.name, self.token = target, name, token
        self.http = requests.Session()
        self.http.headers["Authorization"] = "token " + token

    def api(self, method, path, **kw):
        kw.setdefault("timeout", 90)
        return self.http.request(method, self.target.url + path.lstrip("/"), **kw)


def jail_target(*extra_args):
    """`cellgate serve` with jailed kernels, not started, for cellgate-only tests: a missing binary
    fails the test, a non-root run skips it (the jail needs root)."""
    import pytest
    path, why = cellgate_binary()
    if not path:
        pytest.fail("cellgate target required but " + why)
    if os.geteuid() != 0:
        pytest.skip("the jail needs root")
    return CellgateTarget(path, spawner="jail", extra_args=list(extra_args))


def started_jailed_cellgate(*extra_args):
    """jail_target, started."""
    t = jail_target(*extra_args)
    t.start()
    return t


def make_target(name, **kw):
    if name == "jupyter_server":
        return JupyterServerTarget(**kw)
    if name == "cellgate":
        path, why = cellgate_binary()
        if not path:
            raise FileNotFoundError(why)
        spawner = kw.pop("spawner", None) or os.environ.get("CELLGATE_TEST_SPAWNER", "plain")
        return CellgateTarget(path, spawner=spawner, **kw)
    raise ValueError("unknown target %r" % name)
