# SPDX-License-Identifier: Apache-2.0
# sample_exporter: serves metrics_sample's exposition on 127.0.0.1 behind a bearer token, the way
# the gateway's /metrics answers, so that a real Prometheus can be shown to ingest our text format.
# usage: sample_exporter.py METRICS_SAMPLE TOKEN  (prints the port)
import http.server
import subprocess
import sys

text = subprocess.run([sys.argv[1]], capture_output=True, check=True).stdout
token = sys.argv[2]


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.headers.get("Authorization") != "Bearer " + token:
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)


server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
