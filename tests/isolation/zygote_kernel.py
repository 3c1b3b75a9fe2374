# SPDX-License-Identifier: BSD-3-Clause
# zygote_kernel: real jailed ipykernels started either by cellgate-zygote (the fork server) or cold by
# cellgate-jail, with the same cellgate-jail command line the gateway uses, and a client on them.
import array
import json
import os
import queue
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid

from jupyter_client import BlockingKernelClient
from jupyter_client.connect import write_connection_file

SKIP_RC = 4
RUN = "/run/cellgate"
KERNEL_CMD = ["/usr/bin/python3", "-m", "ipykernel_launcher", "-f"]
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "IPYTHONDIR": "/tmp/.ipython", "KERNEL_ID": "probe",
       "MPLBACKEND": "module://matplotlib_inline.backend_inline"}


def require_or_skip():
    """(jail, zygote) binaries from CELLGATE_JAIL / CELLGATE_ZYGOTE; exits SKIP_RC when jails cannot run here."""
    jail, zygote = os.environ.get("CELLGATE_JAIL", ""), os.environ.get("CELLGATE_ZYGOTE", "")
    reason = None
    if os.geteuid() != 0:
        reason = "needs root"
    elif not (os.access(jail, os.X_OK) and os.access(zygote, os.X_OK)):
        reason = f"cellgate-jail / cellgate-zygote not built ({jail!r}, {zygote!r})"
    elif subprocess.run(["/usr/bin/unshare", "-U", "/usr/bin/true"]).returncode != 0:
        reason = "cannot create a user namespace here"
    if reason:
        print(f"SKIP: {reason}", flush=True)
        sys.exit(SKIP_RC)
    return jail, zygote


class ZygoteServer:
    """A cellgate-zygote of our own on a private socket."""

    def __init__(self, binary, tag="t", args=()):
        os.makedirs(RUN, exist_ok=True)
        self.socket = f"{RUN}/zygote-{tag}-{os.getpid()}.sock"
        self.log_path = f"{RUN}/zygote-{tag}-{os.getpid()}.log"
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([binary, "--socket", self.socket, *args], stdin=subprocess.DEVNULL, stdout=log,
                                     stderr=log, start_new_session=True, env={"PATH": "/usr/bin:/bin"})
        log.close()
        deadline = time.monotonic() + 120
        while not os.path.exists(self.socket):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"cellgate-zygote did not start: {self.log()}")
            time.sleep(0.05)

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()[-4000:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        for p in (self.socket, self.log_path):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass


def zygote_request(sock_path, jail_args, log_path):
    """One fork-server request; returns (errno, helper pid, helper pidfd or None, ready pipe read end)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(sock_path)
    r, w = os.pipe()
    devnull = os.open("/dev/null", os.O_RDONLY)
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    payload = b"CGZ1\0" + b"".join(a.encode() + b"\0" for a in jail_args)
    s.sendmsg([payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [devnull, log, w]))])
    for fd in (w, devnull, log):
        os.close(fd)
    msg, anc, _, _ = s.recvmsg(16, socket.CMSG_SPACE(4))
    s.close()
    if len(msg) != 16:
        os.close(r)
        return -1, -1, None, None
    _, err, pid, _ = array.array("i", msg)
    pidfd = array.array("i", anc[0][2])[0] if anc else None
    if err:
        os.close(r)
        r = None
    return err, pid, pidfd, r


class Kernel:
    """One jailed ipykernel: `zygote` is a ZygoteServer (fork server) or None (cold cellgate-jail)."""

    def __init__(self, jail, zygote=None, command=None, env=None, prepare=None):
        """prepare(kernel) runs before the start, e.g. to add files to kernel.runtime (bound into the jail at
        the same path) or to kernel.env."""
        self.env = dict(ENV, **(env or {}))
        self.kid = "zt" + uuid.uuid4().hex[:12]
        self.runtime = f"{RUN}/k/{self.kid}"
        self.private = f"{RUN}/s/{self.kid}"
        os.makedirs(self.runtime, mode=0o700)
        os.makedirs(self.private, mode=0o700)
        self.conn = self.runtime + "/connection.json"
        self.log_path = self.private + "/kernel.log"
        self.popen = self.pidfd = self.helper = self.kc = None
        try:
            if prepare is not None:
                prepare(self)
            self._start(jail, zygote, command)
        except BaseException:
            self.stop()  # a refused or failed start leaves no jail and no directories behind
            raise

    def _start(self, jail, zygote, command):
        write_connection_file(self.conn, transport="ipc", ip=self.runtime + "/k")
        command = command or KERNEL_CMD + [self.conn]
        if zygote is not None:
            err, self.helper, self.pidfd, ready = zygote_request(zygote.socket, self.args(3, command), self.log_path)
            if err:
                raise RuntimeError(f"the fork server refused: {os.strerror(err) if err > 0 else 'no answer'}")
        else:
            ready, w = os.pipe()
            log = open(self.log_path, "ab")
            self.popen = subprocess.Popen([jail] + self.args(w, command), stdin=subprocess.DEVNULL, stdout=log,
                                          stderr=log, pass_fds=(w,), start_new_session=True, env={"PATH": "/usr/bin:/bin"})
            log.close()
            os.close(w)
            self.helper = self.popen.pid
        line = b""
        while not line.endswith(b"\n"):
            chunk = os.read(ready, 4096)
            if not chunk:
                break
            line += chunk
        os.close(ready)
        self.status = json.loads(line or b"{}")
        if self.status.get("state") != "running":
            raise RuntimeError(f"jail failed: {self.status} {self.log()}")
        self.kc = BlockingKernelClient(connection_file=self.conn)
        self.kc.load_connection_file()
        self.kc.start_channels()
        self.wait_ready(120)

    def wait_ready(self, timeout):
        """kernel_info until a reply (jupyter_client's wait_for_ready takes a slow heartbeat for death)."""
        deadline = time.monotonic() + timeout
        while True:
            self.kc.kernel_info()
            try:
                if self.kc.get_shell_msg(timeout=1)["msg_type"] == "kernel_info_reply":
                    break
            except queue.Empty:
                pass
            if not self.alive() or time.monotonic() > deadline:
                raise RuntimeError(f"no kernel_info_reply: {self.log()}")
        while True:  # the extra requests' replies
            try:
                self.kc.get_shell_msg(timeout=0.2)
            except queue.Empty:
                break

    def args(self, ready_fd, command):
        out = ["--name", self.kid, "--bind-same", self.runtime, "--status-file", self.private + "/jail.json",
               "--ready-fd", str(ready_fd)]
        for k, v in sorted(self.env.items()):
            out += ["--env", f"{k}={v}"]
        return out + ["--"] + command

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()[-3000:]
        except OSError:
            return ""

    def execute(self, code, timeout=60):
        """Runs code; returns (status, stdout text, error ename or None)."""
        out, err = [], []

        def hook(msg):
            if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout":
                out.append(msg["content"]["text"])
            elif msg["msg_type"] == "error":
                err.append(msg["content"]["ename"])
        reply = self.kc.execute_interactive(code, timeout=timeout, output_hook=hook)
        return reply["content"]["status"], "".join(out), (err[0] if err else None)

    def value(self, expr):
        """json.loads of the kernel printing json.dumps(expr)."""
        status, out, ename = self.execute(f"import json as _j\nprint(_j.dumps({expr}))")
        if status != "ok":
            raise RuntimeError(f"{expr}: {ename} {self.log()}")
        return json.loads(out)

    def alive(self):
        try:
            os.kill(self.helper, 0)
            return True
        except ProcessLookupError:
            return False

    def stop(self):
        if self.kc is not None:
            try:
                self.kc.stop_channels()
            except Exception:
                pass
        try:
            if self.helper is not None:
                os.kill(self.helper, signal.SIGUSR1)
        except ProcessLookupError:
            pass
        if self.popen is not None:
            self.popen.wait(timeout=30)
        elif self.pidfd is not None:
            select.select([self.pidfd], [], [], 30)
            os.close(self.pidfd)
        shutil.rmtree(self.runtime, ignore_errors=True)
        shutil.rmtree(self.private, ignore_errors=True)
