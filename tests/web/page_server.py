# SPDX-License-Identifier: Apache-2.0
# page_server: serves the pages' embedded assets (as web_dump wrote them, with the headers cellgate
# gives them) on 127.0.0.1 and passes /api/ through to a gateway, so that the pages run same-origin
# against a real gateway. usage: page_server.py DUMP_DIR GATEWAY_URL  (prints "port N")
import http.client
import http.server
import json
import os
import sys
import urllib.parse

dump, gateway = sys.argv[1], urllib.parse.urlsplit(sys.argv[2])
manifest = json.load(open(os.path.join(dump, "manifest.json")))
headers = manifest.pop("/headers")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def forward(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        conn = http.client.HTTPConnection(gateway.hostname, gateway.port, timeout=120)
        fwd = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
        conn.request(self.command, self.path, body=body, headers=fwd)
        res = conn.getresponse()
        data = res.read()
        self.send_response(res.status)
        for k, v in res.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def serve_asset(self):
        path = urllib.parse.urlsplit(self.path).path.lstrip("/")
        a = manifest.get(path)
        if a is None:
            self.send_error(404)
            return
        data = open(os.path.join(dump, a["file"]), "rb").read()
        self.send_response(200)
        self.send_header("Content-Type", a["content_type"])
        self.send_header("ETag", a["etag"])
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def handle_any(self):
        if self.path.startswith("/api/"):
            self.forward()
        elif self.command == "GET":
            self.serve_asset()
        else:
            self.send_error(405)

    do_GET = do_POST = do_DELETE = do_PATCH = do_PUT = handle_any


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print("port", server.server_address[1], flush=True)
server.serve_forever()
