# SPDX-License-Identifier: Apache-2.0
# TLS: `cellgate serve --certfile --keyfile` with a self-signed certificate made by the openssl CLI,
# driven by real clients: Python ssl (urllib, requests), curl, websocket-client over wss://.
import json
import os
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.request

import pytest

import targets as targets_mod
from conftest import selected_targets
from jupyter_ws import KernelWS

pytestmark = pytest.mark.skipif("cellgate" not in selected_targets(), reason="TLS options are cellgate's")


def make_cert(directory, name="server"):
    """A self-signed EC certificate for 127.0.0.1 and localhost: (certfile, keyfile)."""
    cert, key = os.path.join(directory, name + ".crt"), os.path.join(directory, name + ".key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True, timeout=60)
    return cert, key


@pytest.fixture(scope="module")
def certs():
    d = tempfile.mkdtemp(prefix="cellgate-tls-")
    yield d, make_cert(d)


@pytest.fixture(scope="module")
def tls_target(certs):
    path, why = targets_mod.cellgate_binary()
    if not path:
        pytest.fail("cellgate target required but " + why)
    _, (cert, key) = certs
    t = targets_mod.make_target("cellgate", tls=(cert, key))
    t.start()
    yield t
    t.stop()


def host_port(t):
    hp = t.url.split("//", 1)[1].split("/", 1)[0]
    host, port = hp.rsplit(":", 1)
    return host, int(port)


def test_url_line_says_https(tls_target):
    assert tls_target.url.startswith("https://127.0.0.1:"), tls_target.url


def test_rest_with_python_ssl(tls_target, certs):
    _, (cert, _) = certs
    ctx = ssl.create_default_context(cafile=cert)  # verifies the chain and the host name (IP SAN)
    req = urllib.request.Request(tls_target.url + "api/kernelspecs",
                                 headers={"Authorization": "token " + tls_target.token})
    with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
        assert r.status == 200
        assert "python3" in json.loads(r.read())["kernelspecs"]
    # requests, verifying against the same certificate.
    r = tls_target.get("api/status")
    assert r.status_code == 200, r.text
    # A client that does not trust the certificate refuses it: the server really presents it.
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(tls_target.url + "api", context=ssl.create_default_context(), timeout=30)


def test_rest_with_curl(tls_target, certs):
    _, (cert, _) = certs
    out = subprocess.run(["curl", "-sS", "--fail", "--cacert", cert, "-H", "Authorization: token " + tls_target.token,
                          tls_target.url + "api/kernelspecs"], capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "python3" in json.loads(out.stdout)["kernelspecs"]
    # Without the CA curl must refuse the self-signed certificate (exit 60).
    bad = subprocess.run(["curl", "-sS", tls_target.url + "api"], capture_output=True, timeout=60)
    assert bad.returncode == 60, (bad.returncode, bad.stderr)


def test_archive_download_over_tls(tls_target, certs):
    """An archive's body is written from a staged file in pieces: over TLS too, whole and intact."""
    import io
    import tarfile
    _, (cert, _) = certs
    data = os.urandom(3 << 20)
    made = tls_target.post("api/workspaces", json={"name": "tls-archive"})
    assert made.status_code == 201, made.text
    put = tls_target.api("PUT", "api/workspaces/tls-archive/files/tls_blob.bin", data=data)
    assert put.status_code in (200, 201), put.text
    snap = tls_target.post("api/workspaces/tls-archive/snapshots", json={"label": "tls"})
    assert snap.status_code == 201, snap.text
    out = subprocess.run(["curl", "-sS", "--fail", "--cacert", cert, "-H", "Authorization: token " + tls_target.token,
                          tls_target.url + "api/workspaces/tls-archive/snapshots/%s/archive" % snap.json()["id"]],
                         capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    with tarfile.open(fileobj=io.BytesIO(out.stdout)) as tar:
        names = {n.lstrip("./"): n for n in tar.getnames()}
        assert tar.extractfile(names["tls_blob.bin"]).read() == data


def test_kernel_execute_over_wss(tls_target, certs):
    _, (cert, _) = certs
    kid = tls_target.start_kernel()["id"]
    try:
        for protocol in ("legacy", "v1"):
            ws = KernelWS(tls_target.url, tls_target.token, kid, protocol=protocol, cafile=cert)
            try:
                assert isinstance(ws.ws.sock, ssl.SSLSocket), ws.ws.sock  # wss://, not ws://
                res = ws.execute("print(6 * 7)")
                assert res.reply["content"]["status"] == "ok", res.reply
                out = "".join(m["content"].get("text", "") for m in res.iopub if m["header"]["msg_type"] == "stream")
                assert out.strip() == "42", res.iopub
                # Megabytes: frames the gateway hands to the TLS stream in pieces, across many records.
                res = ws.execute("print('x' * (3 << 20))")
                out = "".join(m["content"].get("text", "") for m in res.iopub if m["header"]["msg_type"] == "stream")
                assert out == "x" * (3 << 20) + "\n", len(out)
            finally:
                ws.close()
        # The agent API's NDJSON stream is written straight to the TLS stream.
        r = tls_target.post("api/kernels/%s/execute" % kid, json={"code": "print('streamed')"},
                            headers={"Accept": "application/x-ndjson"}, stream=True)
        lines = [json.loads(line) for line in r.iter_lines() if line]
        assert lines[-1]["type"] == "result" and lines[-1]["status"] == "ok", lines
        assert any("streamed" in json.dumps(line) for line in lines[:-1]), lines
    finally:
        tls_target.delete_kernel(kid)


def test_mcp_endpoint_works_with_tls(tls_target):
    """/mcp calls the REST API over loopback: with TLS on, that must still work."""
    h = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    init = tls_target.post("mcp", headers=h, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    assert init.status_code == 200, init.text
    h["Mcp-Session-Id"] = init.headers["Mcp-Session-Id"]
    tls_target.post("mcp", headers=h, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    r = tls_target.post("mcp", headers=h, json={"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                                 "params": {"name": "list_kernels", "arguments": {}}})
    assert r.status_code == 200, r.text
    result = r.json()["result"]
    assert result.get("isError") is False, result


def raw_exchange(t, payload, timeout=15):
    """Sends bytes on a plain TCP connection to the TLS port; returns all it answers until close."""
    with socket.create_connection(host_port(t), timeout=timeout) as s:
        if payload:
            s.sendall(payload)
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:  # closed with our bytes unread: a reset, still a close
                return data
            if not chunk:
                return data
            data += chunk


def test_plain_http_to_tls_port_is_refused_cleanly(tls_target):
    data = raw_exchange(tls_target, b"GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400"), data
    assert "https" in json.loads(body)["message"], body
    # Garbage that is neither HTTP nor TLS: the connection is just closed.
    assert raw_exchange(tls_target, b"\x00\x01garbage-not-tls" * 10).find(b"HTTP/1.1 200") < 0
    # The server keeps serving TLS clients.
    assert tls_target.get("api").status_code == 200


def test_silent_connection_is_closed_by_the_handshake_timeout(tls_target):
    start = time.monotonic()
    assert raw_exchange(tls_target, b"", timeout=30) == b""
    assert time.monotonic() - start < 25
    assert tls_target.get("api").status_code == 200


def run_serve(extra, timeout=30):
    path, why = targets_mod.cellgate_binary()
    if not path:
        pytest.fail("cellgate target required but " + why)
    d = tempfile.mkdtemp(prefix="cellgate-tls-bad-")
    return subprocess.run([path, "serve", "--port", "0", "--data-dir", os.path.join(d, "data"),
                           "--runtime-dir", os.path.join(d, "run"), "--spawner", "plain", "--workspace-volume", "off"] + extra,
                          capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("case", ["missing", "garbage", "mismatch", "cert_only", "unreadable_key"])
def test_bad_certificate_or_key_fails_fast_with_one_line(certs, case):
    d, (cert, key) = certs
    garbage = os.path.join(d, "garbage.pem")
    with open(garbage, "w") as f:
        f.write("-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n")
    other_cert, other_key = make_cert(d, "other")
    args = {"missing": ["--certfile", os.path.join(d, "nope.crt"), "--keyfile", key],
            "garbage": ["--certfile", garbage, "--keyfile", key],
            "mismatch": ["--certfile", cert, "--keyfile", other_key],
            "cert_only": ["--certfile", cert],
            "unreadable_key": ["--certfile", cert, "--keyfile", d]}[case]
    start = time.monotonic()
    out = run_serve(args)
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert time.monotonic() - start < 10
    lines = out.stderr.decode().strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("cellgate: --") and ("certfile" in lines[0] or "keyfile" in lines[0]), lines
    assert out.stdout == b"", out.stdout  # no URL line: it never served
