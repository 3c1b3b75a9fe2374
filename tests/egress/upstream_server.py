# SPDX-License-Identifier: BSD-3-Clause
# upstream_server: the servers the egress tests reach through the proxy (HTTP/1.1 keep-alive, optional
# TLS, IPv4 or IPv6). They never echo an Authorization value: a brokered secret must not come back.
"""usage: upstream_server.py --bind ADDR --port N [--tls CERT KEY] [--auth FILE] [--index DIR] [--index-auth]

Routes:
  /hello            "hello from <Host>"
  /bytes/N          N bytes (Content-Length), written in 64 KiB pieces
  /chunked/N        N bytes, chunked
  /headers          the request's headers as JSON (Authorization shown as "<present>")
  /auth             200 {"authorized": true} when Authorization equals the first line of FILE, else 401
  /simple/..., /packages/...  files under DIR (a pip simple index); with --index-auth they need /auth's check
  POST /upload      {"received": N}
Prints "ready" on stdout once listening.
"""
import argparse
import json
import os
import socket
import ssl
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CHUNK = 64 * 1024


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are separate writes
    server_version = "cellgate-test-upstream"

    def log_message(self, *args):
        pass

    def send_body(self, code, body, ctype="application/octet-stream"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def authorized(self):
        return self.server.auth is not None and self.headers.get("Authorization") == self.server.auth

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        if path == "/hello":
            return self.send_body(200, ("hello from %s\n" % self.headers.get("Host")).encode(), "text/plain")
        if path.startswith("/bytes/"):
            n = int(path.split("/")[2])
            self.send_response(200)
            self.send_header("Content-Length", str(n))
            self.end_headers()
            if self.command == "HEAD":
                return
            piece = b"x" * CHUNK
            while n > 0:
                self.wfile.write(piece[: min(n, CHUNK)])
                n -= min(n, CHUNK)
            return
        if path.startswith("/chunked/"):
            n = int(path.split("/")[2])
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            while n > 0:
                k = min(n, 10000)
                self.wfile.write(b"%x\r\n%s\r\n" % (k, b"y" * k))
                n -= k
            self.wfile.write(b"0\r\n\r\n")
            return
        if path == "/headers":
            h = {k: ("<present>" if k.lower() == "authorization" else v) for k, v in self.headers.items()}
            return self.send_body(200, json.dumps(h).encode(), "application/json")
        if path == "/auth":
            ok = self.authorized()
            return self.send_body(200 if ok else 401, json.dumps({"authorized": ok}).encode(), "application/json")
        if self.server.index and (path.startswith("/simple/") or path.startswith("/packages/")):
            if self.server.index_auth and not self.authorized():
                return self.send_body(401, b"credentials required\n", "text/plain")
            full = os.path.realpath(os.path.join(self.server.index, path.lstrip("/")))
            if os.path.isdir(full):
                full = os.path.join(full, "index.html")
            if not full.startswith(os.path.realpath(self.server.index)) or not os.path.isfile(full):
                return self.send_body(404, b"not found\n", "text/plain")
            with open(full, "rb") as f:
                data = f.read()
            return self.send_body(200, data, "text/html" if full.endswith(".html") else "application/octet-stream")
        self.send_body(404, b"not found\n", "text/plain")

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        got = 0
        while got < n:
            piece = self.rfile.read(min(CHUNK, n - got))
            if not piece:
                break
            got += len(piece)
        self.send_body(200, json.dumps({"received": got}).encode(), "application/json")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bind", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--tls", nargs=2)
    ap.add_argument("--auth")
    ap.add_argument("--index")
    ap.add_argument("--index-auth", action="store_true")
    a = ap.parse_args()
    Server.address_family = socket.AF_INET6 if ":" in a.bind else socket.AF_INET
    s = Server((a.bind, a.port), Handler)
    s.auth = None
    if a.auth:
        with open(a.auth) as f:
            s.auth = f.readline().rstrip("\n")
    s.index = a.index
    s.index_auth = a.index_auth
    if a.tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.tls[0], a.tls[1])
        s.socket = ctx.wrap_socket(s.socket, server_side=True)
    print("ready", flush=True)
    s.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
