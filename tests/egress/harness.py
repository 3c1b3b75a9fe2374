# SPDX-License-Identifier: BSD-3-Clause
# harness: a private network namespace with test upstreams, a real cellgate-egress, and real jails
# (cellgate-jail --egress) running real clients (curl, requests, urllib, pip) against them.
"""Every test runs inside a network namespace of its own (the script re-executes itself under
`unshare --net`): the upstream servers listen on its loopback and the proxy connects from it, so no
test — and no broken proxy — can send a byte to any other address. The jails are made from there
and have network namespaces of their own; their only way out is the proxy's endpoint.

Exit codes: 0 pass, 1 fail, 4 (ctest SKIP_RETURN_CODE) when the machine cannot run jails.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SKIP_RC = 4
PYTHON = "/usr/bin/python3"
HERE = os.path.dirname(os.path.abspath(__file__))
CA_INSIDE = "/etc/cellgate/egress-ca.pem"  # kernel-launcher/egress_env.h kEgressCaPath
PROXY_PORT = 3128


class Failure(Exception):
    pass


class Skip(Exception):
    pass


def log(*parts):
    print(*parts, flush=True)


def check(cond, what):
    log(("ok:   " if cond else "FAIL: ") + what)
    if not cond:
        raise Failure(what)


def enter_private_netns():
    """Re-executes this script in a new network namespace with loopback up (once)."""
    if os.environ.get("CELLGATE_EGRESS_NETNS") == "1":
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        return
    if os.geteuid() != 0:
        log("SKIP: needs root (jails, network namespaces)")
        sys.exit(SKIP_RC)
    env = dict(os.environ, CELLGATE_EGRESS_NETNS="1")
    rc = subprocess.run(["unshare", "--net", "--", PYTHON] + sys.argv, env=env).returncode
    sys.exit(rc)


def egress_env(port=PROXY_PORT, ca=True):
    """What kernel-launcher/egress_env.cc gives a kernel (kept in step with it)."""
    proxy = f"http://127.0.0.1:{port}"
    env = {"HTTP_PROXY": proxy, "http_proxy": proxy, "HTTPS_PROXY": proxy, "https_proxy": proxy,
           "NO_PROXY": "localhost,127.0.0.1,::1", "no_proxy": "localhost,127.0.0.1,::1"}
    if ca:
        for k in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "PIP_CERT", "GIT_SSL_CAINFO"):
            env[k] = CA_INSIDE
    return env


def free_port(family=socket.AF_INET, host="127.0.0.1"):
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class Rig:
    """One test's world: certificates, upstreams, the proxy, and jails."""

    def __init__(self, egress_bin, jail_bin, work):
        self.egress_bin = egress_bin
        self.jail_bin = jail_bin
        os.makedirs(work, exist_ok=True)
        self.dir = tempfile.mkdtemp(prefix="eg-", dir=work)
        os.chmod(self.dir, 0o755)
        self.procs = []
        self.jails = []
        self.serial = 0
        self.tag = f"egt{os.getpid()}"
        self.secret = "cg-secret-" + os.urandom(12).hex()
        self.make_certs()

    # --- setup -------------------------------------------------------------------------------
    def path(self, name):
        return os.path.join(self.dir, name)

    def make_certs(self):
        """A test CA and one server certificate for every test name (openssl CLI)."""
        names = ["web.test", "api.test", "other.test", "mirror.test", "v6.test", "loop.test", "intra.test"]
        run = lambda *a: subprocess.run(a, check=True, capture_output=True)
        run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", self.path("test-ca.key"), "-out", self.path("test-ca.pem"), "-days", "2",
            "-subj", "/CN=cellgate egress test CA", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign")
        run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", self.path("server.key"), "-out", self.path("server.csr"), "-subj", "/CN=web.test")
        with open(self.path("server.ext"), "w") as f:
            f.write("subjectAltName=" + ",".join("DNS:" + n for n in names) + "\n"
                    "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n")
        run("openssl", "x509", "-req", "-in", self.path("server.csr"), "-CA", self.path("test-ca.pem"),
            "-CAkey", self.path("test-ca.key"), "-CAcreateserial", "-out", self.path("server.pem"), "-days", "2",
            "-extfile", self.path("server.ext"))

    def upstream(self, bind="127.0.0.1", tls=False, auth=None, index=None, index_auth=False):
        """Starts one upstream server; returns its port."""
        family = socket.AF_INET6 if ":" in bind else socket.AF_INET
        port = free_port(family, bind)
        cmd = [PYTHON, os.path.join(HERE, "upstream_server.py"), "--bind", bind, "--port", str(port)]
        if tls:
            cmd += ["--tls", self.path("server.pem"), self.path("server.key")]
        if auth:
            with open(self.path("expected-auth"), "w") as f:
                f.write(auth + "\n")
            cmd += ["--auth", self.path("expected-auth")]
        if index:
            cmd += ["--index", index] + (["--index-auth"] if index_auth else [])
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        self.procs.append(p)
        if p.stdout.readline().strip() != "ready":
            raise Failure(f"upstream server on {bind}:{port} did not start")
        return port

    def start_egress(self, hosts, extra=(), secrets=None, limits=None):
        """Starts cellgate-egress (names from `hosts`: {name: address}); waits until it is ready."""
        with open(self.path("hosts"), "w") as f:
            for name, addr in hosts.items():
                f.write(f"{addr} {name}\n")
        secrets = secrets if secrets is not None else {"api": self.secret}
        with open(self.path("secrets.json"), "w") as f:
            json.dump(secrets, f)
        os.chmod(self.path("secrets.json"), 0o600)
        self.control = self.path("egress.sock")
        self.audit_path = self.path("audit.log")
        cmd = [self.egress_bin, "--control", self.control, "--hosts", self.path("hosts"), "--no-dns",
               "--ca-dir", self.path("ca"), "--upstream-ca", self.path("test-ca.pem"),
               "--secrets", self.path("secrets.json"), "--audit-log", self.audit_path] + list(extra)
        if limits:
            cmd += ["--limits", json.dumps(limits)]
        self.egress_log = open(self.path("egress.log"), "w")
        self.egress = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.egress_log, text=True)
        self.procs.append(self.egress)
        line = self.egress.stdout.readline()
        if not line.startswith("cellgate-egress: ready"):
            raise Failure(f"cellgate-egress did not start: {line!r} {open(self.path('egress.log')).read()}")
        # What the jail trusts: the proxy's bundle (system store + interception CA) and, for the
        # tunnelled (not intercepted) test servers, the test CA.
        with open(self.path("jail-bundle.pem"), "w") as out:
            for src in (self.path("ca/bundle.pem"), self.path("test-ca.pem")):
                with open(src) as f:
                    out.write(f.read())

    def ctl(self, request):
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(self.control)
            s.sendall((json.dumps(request) + "\n").encode())
            data = b""
            while not data.endswith(b"\n"):
                piece = s.recv(65536)
                if not piece:
                    break
                data += piece
        return json.loads(data)

    def policy(self, kernel, policy, user="alice"):
        answer = self.ctl({"op": "set", "kernel": kernel, "user": user, "policy": policy})
        if not answer.get("ok"):
            raise Failure(f"policy for {kernel} refused: {answer}")
        return answer

    # --- jails ---------------------------------------------------------------------------------
    def kernel_name(self, label):
        self.serial += 1
        return f"{self.tag}-{label}-{self.serial}"[:64]

    def jail_cmd(self, kernel, argv, env=None, egress=True, extra=()):
        cmd = [self.jail_bin, "--name", kernel]
        if egress:
            cmd += ["--egress", self.control, "--ro-bind", self.path("jail-bundle.pem") + ":" + CA_INSIDE]
        for k, v in dict(egress_env() if egress else {}, **(env or {})).items():
            cmd += ["--env", f"{k}={v}"]
        return cmd + list(extra) + ["--"] + list(argv)

    def jail(self, kernel, argv, env=None, egress=True, timeout=120, extra=()):
        """Runs argv in a jail of `kernel` and returns (exit code, stdout, stderr)."""
        p = subprocess.run(self.jail_cmd(kernel, argv, env, egress, extra), capture_output=True, text=True, timeout=timeout)
        log(f"  [{kernel}] exit {p.returncode}")
        for line in (p.stdout + p.stderr).splitlines()[-30:]:
            log("  | " + line)
        return p.returncode, p.stdout, p.stderr

    def jail_python(self, kernel, code, **kw):
        return self.jail(kernel, [PYTHON, "-c", code], **kw)

    def background_jail(self, kernel, argv, env=None, extra=()):
        p = subprocess.Popen(self.jail_cmd(kernel, argv, env, extra=extra), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        self.jails.append(p)
        return p

    # --- audit ---------------------------------------------------------------------------------
    def audit(self, kernel=None):
        """The audit lines so far (of one kernel)."""
        lines = []
        if os.path.exists(self.audit_path):
            with open(self.audit_path) as f:
                for line in f:
                    if line.strip():
                        lines.append(json.loads(line))
        return [l for l in lines if kernel is None or l["kernel"] == kernel]

    def wait_audit(self, kernel, count, timeout=10):
        """Audit lines are written when a connection ends: wait for `count` of them."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            lines = self.audit(kernel)
            if len(lines) >= count:
                return lines
            time.sleep(0.05)
        return self.audit(kernel)

    # --- teardown ------------------------------------------------------------------------------
    def close(self):
        for p in self.jails + self.procs[::-1]:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.jails + self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if os.environ.get("CELLGATE_KEEP_TEST_DIRS") != "1":
            shutil.rmtree(self.dir, ignore_errors=True)


def main(cases, argv):
    """usage: SCRIPT --egress BIN --jail BIN --work DIR CASE"""
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--egress", required=True)
    ap.add_argument("--jail", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("case", choices=sorted(cases))
    a = ap.parse_args(argv)
    for binary in (a.egress, a.jail):
        if not os.access(binary, os.X_OK):
            log(f"SKIP: {binary} is not built")
            return SKIP_RC
    if subprocess.run(["/usr/bin/unshare", "-U", "/usr/bin/true"]).returncode != 0:
        log("SKIP: cannot create a user namespace here")
        return SKIP_RC
    enter_private_netns()
    rig = Rig(os.path.abspath(a.egress), os.path.abspath(a.jail), os.path.abspath(a.work))
    try:
        cases[a.case](rig)
        log(f"PASS {a.case}")
        return 0
    except Failure as e:
        log(f"FAIL {a.case}: {e}")
        try:
            with open(rig.path("egress.log")) as f:
                log("--- cellgate-egress log ---\n" + f.read()[-4000:])
        except OSError:
            pass
        return 1
    except Skip as e:
        log(f"SKIP: {e}")
        return SKIP_RC
    finally:
        rig.close()
