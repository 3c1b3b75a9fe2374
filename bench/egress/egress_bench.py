#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# cellgate-bench: figures
"""egress_bench: a jailed kernel's traffic through cellgate-egress against the same client on direct
loopback, in one run (interleaved, medians).

Needs root (real jails, a network namespace). Everything runs in a network namespace of its own:
the upstream server on its loopback, the proxy, and the direct client; the proxied client runs in a
real jail (cellgate-jail --egress), which reaches the upstream only through the proxy. Figures:
  - a 100 MB download with curl, over http (the proxy forwards: parses and relays the body) and over
    https (a CONNECT tunnel after the SNI check): MB/s, target >= 0.8x direct;
  - 1,000 small requests from one Python client (http.client, 200-byte answers): on one kept-alive
    connection, and on a new connection each: ms per request, target <= direct + 1 ms;
  - the proxy's own CPU time (user + system, /proc/PID/stat) per 100 MB downloaded: what the hop costs
    whatever the number of CPUs. On a host with few CPUs the throughput ratio is bounded by it: the TLS
    server, the TLS client and the proxy then share the CPUs the direct pair has to itself.
The client's own time is measured (curl's time_total; a loop's wall time), never the jail's start.

usage: egress_bench.py --bin BUILD/bin [--runs N] [--quick]
       egress_bench.py --jsonl --cellgate BUILD/bin/cellgate [--quick]      (for bench/run.py)
(exits 4 when it cannot run here)
"""
import argparse
import json
import os
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PYTHON = "/usr/bin/python3"
SKIP_RC = 4
HOSTS = "127.0.0.1 bench.test\n"
PROXY_ENV = {"http_proxy": "http://127.0.0.1:3128", "https_proxy": "http://127.0.0.1:3128",
             "HTTP_PROXY": "http://127.0.0.1:3128", "HTTPS_PROXY": "http://127.0.0.1:3128"}

# The client loop: the same code runs in the jail (through the proxy) and directly.
CLIENT = r'''
import http.client, json, socket, subprocess, sys, time
proxy = sys.argv[1] == "proxy"
for line in sys.stdin:
    cmd = json.loads(line)
    if cmd["op"] == "download":
        args = ["curl", "-s", "-o", "/dev/null", "-w", "%{time_total} %{size_download}", cmd["url"]]
        if cmd.get("ca"):
            args[1:1] = ["--cacert", cmd["ca"]]
        if cmd.get("resolve"):
            args[1:1] = ["--resolve", cmd["resolve"]]
        if not proxy:
            args[1:1] = ["--noproxy", "*"]
        t, n = subprocess.run(args, capture_output=True, text=True).stdout.split()
        print(json.dumps({"seconds": float(t), "bytes": int(n)}), flush=True)
    elif cmd["op"] == "requests":
        host, port, n, fresh = cmd["host"], cmd["port"], cmd["n"], cmd["fresh"]
        def connect():
            if proxy:
                c = http.client.HTTPConnection("127.0.0.1", 3128)
            else:
                c = http.client.HTTPConnection(cmd["address"], port)
            return c
        target = ("http://%s:%d/small" % (host, port)) if proxy else "/small"
        c = connect()
        t = time.perf_counter()
        for _ in range(n):
            if fresh:
                c.close()
                c = connect()
            c.request("GET", target, headers={"Host": "%s:%d" % (host, port)})
            r = c.getresponse()
            r.read()
            assert r.status == 200, r.status
        dt = time.perf_counter() - t
        c.close()
        print(json.dumps({"seconds": dt, "n": n}), flush=True)
'''


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are separate writes

    def log_message(self, *a):
        pass

    def do_GET(self):
        if self.path == "/small":
            body = b"s" * 200
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        size = os.path.getsize(self.server.blob)
        self.send_response(200)
        self.send_header("Content-Length", str(size))
        self.end_headers()
        with open(self.server.blob, "rb") as f:
            if isinstance(self.connection, ssl.SSLSocket):
                while True:
                    piece = f.read(1 << 20)
                    if not piece:
                        break
                    self.wfile.write(piece)
            else:
                self.wfile.flush()
                self.connection.sendfile(f)  # zero-copy: the server is not the bottleneck


class Server(ThreadingHTTPServer):
    daemon_threads = True


def serve(blob, tls=None):
    s = Server(("127.0.0.1", 0), Handler)
    s.blob = blob
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(*tls)
        s.socket = ctx.wrap_socket(s.socket, server_side=True)
    threading.Thread(target=s.serve_forever, daemon=True).start()
    return s.server_address[1]


class Client:
    def __init__(self, argv, env):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  env=env)

    def ask(self, **cmd):
        self.p.stdin.write(json.dumps(cmd) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError("the client ended")
        return json.loads(line)

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


def certs(d):
    run = lambda *a: subprocess.run(a, check=True, capture_output=True)
    run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
        f"{d}/ca.key", "-out", f"{d}/ca.pem", "-days", "2", "-subj", "/CN=bench CA")
    run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
        f"{d}/srv.key", "-out", f"{d}/srv.csr", "-subj", "/CN=bench.test")
    with open(f"{d}/ext", "w") as f:
        f.write("subjectAltName=DNS:bench.test\n")
    run("openssl", "x509", "-req", "-in", f"{d}/srv.csr", "-CA", f"{d}/ca.pem", "-CAkey", f"{d}/ca.key",
        "-CAcreateserial", "-out", f"{d}/srv.pem", "-days", "2", "-extfile", f"{d}/ext")


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime, proc(5)


def measure(a, bindir):
    egress_bin, jail_bin = os.path.join(bindir, "cellgate-egress"), os.path.join(bindir, "cellgate-jail")
    if os.geteuid() != 0 or not os.access(egress_bin, os.X_OK) or not os.access(jail_bin, os.X_OK):
        print("egress_bench: needs root and cellgate-egress, cellgate-jail in " + bindir, file=sys.stderr)
        sys.exit(SKIP_RC)
    d = tempfile.mkdtemp(prefix="egress-bench-")
    os.chmod(d, 0o755)
    size = (10 if a.quick else 100) * 1000 * 1000
    n_small = 100 if a.quick else 1000
    blob = f"{d}/blob"
    with open(blob, "wb") as f:
        f.truncate(size)  # sparse: the page cache serves zeros, no disk in the figure
    certs(d)
    http_port = serve(blob)
    https_port = serve(blob, (f"{d}/srv.pem", f"{d}/srv.key"))
    with open(f"{d}/hosts", "w") as f:
        f.write(HOSTS)
    procs = []
    egress = subprocess.Popen([egress_bin, "--control", f"{d}/ctl.sock", "--hosts", f"{d}/hosts", "--no-dns",
                               "--log-level", "warn"], stdout=subprocess.PIPE, text=True)
    procs.append(egress)
    if not egress.stdout.readline().startswith("cellgate-egress: ready"):
        raise RuntimeError("cellgate-egress did not start")
    kernel = f"egb{os.getpid()}"
    policy = {"mode": "allowlist", "allow": [{"host": "bench.test", "ports": [http_port, https_port], "addresses": ["127.0.0.1"]}],
              "limits": {"bytes_in": "1T", "bytes_out": "1T", "open": 4096, "connections": 1 << 40, "rate": 1000000, "burst": 1000000}}
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(f"{d}/ctl.sock")
        s.sendall((json.dumps({"op": "set", "kernel": kernel, "user": "bench", "policy": policy}) + "\n").encode())
        assert json.loads(s.recv(65536))["ok"]
    jail_cmd = [jail_bin, "--name", kernel, "--egress", f"{d}/ctl.sock", "--ro-bind", f"{d}/ca.pem:/etc/cellgate/bench-ca.pem"]
    for k, v in PROXY_ENV.items():
        jail_cmd += ["--env", f"{k}={v}"]
    proxied = Client(jail_cmd + ["--", PYTHON, "-c", CLIENT, "proxy"], {"PATH": "/usr/bin:/bin"})
    direct = Client([PYTHON, "-c", CLIENT, "direct"], {"PATH": "/usr/bin:/bin"})
    results = {}
    cpu_total = {}
    try:
        for _ in range(a.runs):  # interleaved: each run measures both sides back to back
            for name, client, ca in (("direct", direct, f"{d}/ca.pem"), ("proxy", proxied, "/etc/cellgate/bench-ca.pem")):
                # The direct client resolves bench.test itself (curl --resolve); the jail cannot.
                resolve = lambda port: "" if name == "proxy" else f"bench.test:{port}:127.0.0.1"
                for scheme, port, ca_file in (("http", http_port, None), ("https", https_port, ca)):
                    before = cpu_seconds(egress.pid)
                    r = client.ask(op="download", url=f"{scheme}://bench.test:{port}/blob", ca=ca_file, resolve=resolve(port))
                    assert r["bytes"] == size, r
                    results.setdefault((scheme, name), []).append(size / r["seconds"] / 1e6)
                    if name == "proxy":  # summed over the runs: the clock ticks are 10 ms (proc(5))
                        cpu_total[scheme] = cpu_total.get(scheme, 0.0) + cpu_seconds(egress.pid) - before
                for fresh in (False, True):
                    r = client.ask(op="requests", host="bench.test", address="127.0.0.1", port=http_port, n=n_small, fresh=fresh)
                    results.setdefault(("small-new" if fresh else "small-kept", name), []).append(r["seconds"] / n_small * 1000)
    finally:
        direct.close()
        proxied.close()
        for p in procs:
            p.terminate()
            p.wait(timeout=10)
        subprocess.run(["rm", "-rf", d])
    m = {k: statistics.median(v) for k, v in results.items()}
    for scheme, seconds in cpu_total.items():
        m[(scheme + "-cpu", "proxy")] = seconds * 1000 * 100e6 / (size * a.runs)
    return m, size, n_small


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin")
    ap.add_argument("--cellgate")
    ap.add_argument("--jsonl", action="store_true")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int, default=0)
    a = ap.parse_args()
    a.runs = a.runs or (2 if a.quick else 5)
    bindir = a.bin or (os.path.dirname(os.path.abspath(a.cellgate)) if a.cellgate else "")
    if os.environ.get("CELLGATE_EGRESS_BENCH_NETNS") != "1":
        if os.geteuid() != 0:
            print("egress_bench: needs root", file=sys.stderr)
            return SKIP_RC
        env = dict(os.environ, CELLGATE_EGRESS_BENCH_NETNS="1")
        return subprocess.run(["unshare", "--net", "--", PYTHON] + sys.argv, env=env).returncode
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    m, size, n = measure(a, bindir)
    mb = size // 1000000
    figures = [
        (f"{mb} MB download, http (forwarded)", "MB/s", m[("http", "proxy")], m[("http", "direct")], ">= 0.8x direct"),
        (f"{mb} MB download, https (CONNECT tunnel)", "MB/s", m[("https", "proxy")], m[("https", "direct")], ">= 0.8x direct"),
        (f"{n} small requests, one kept-alive connection", "ms/request", m[("small-kept", "proxy")], m[("small-kept", "direct")], "<= direct+1"),
        (f"{n} small requests, a new connection each", "ms/request", m[("small-new", "proxy")], m[("small-new", "direct")], "<= direct+1"),
    ]
    cpu_figures = [(f"proxy CPU per 100 MB, {scheme}", "ms", m[(scheme + "-cpu", "proxy")]) for scheme in ("http", "https")]
    if a.jsonl:
        for fig, unit, proxy, direct, target in figures:
            print(json.dumps({"figure": fig, "backend": "cellgate", "value": round(proxy, 4), "unit": unit, "target": target, "group": "egress"}))
            print(json.dumps({"figure": fig, "backend": "direct", "value": round(direct, 4), "unit": unit, "group": "egress"}))
        for fig, unit, value in cpu_figures:
            print(json.dumps({"figure": fig, "backend": "cellgate", "value": round(value, 1), "unit": unit, "group": "egress"}))
        return 0
    print(f"{'figure':50} {'unit':11} {'proxy':>9} {'direct':>9} {'ratio':>7}  target")
    for fig, unit, proxy, direct, target in figures:
        print(f"{fig:50} {unit:11} {proxy:9.3f} {direct:9.3f} {proxy / direct:6.2f}x  {target}")
    for fig, unit, value in cpu_figures:
        print(f"{fig:50} {unit:11} {value:9.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
