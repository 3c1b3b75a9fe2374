# SPDX-License-Identifier: Apache-2.0
# Hole 4 of issue 20, and the HTTP transport's deadlines: a client that does not read, or that trickles
# its request, must not make the gateway hold bytes or connections without bound. An NDJSON execute
# whose client never reads, while the cell prints and clears its output in a loop, grew the gateway by
# 659 MiB (clear_output gave the output budget back, and chunks had no write deadline); a header sent
# a byte at a time held its connection for the whole 60 s read timeout.
import socket
import time

import hostile as h

PRINT_AND_CLEAR = (
    "import time\n"
    "from IPython.display import clear_output\n"
    "t0 = time.time(); line = 'x' * 65535\n"
    "while time.time() - t0 < %d:\n"
    "    print(line)\n"
    "    clear_output(wait=True)\n")


def raw_request(t, method, path, body=b"", headers=()):
    """An HTTP/1.1 request on a socket of our own; returns the socket, not read."""
    host, port = t.url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    s = socket.create_connection((host, int(port)))
    # A client that does not read: the smallest receive buffer, so the gateway's sends back up at once.
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    head = "%s /%s HTTP/1.1\r\nHost: %s:%s\r\nAuthorization: token %s\r\n" % (method, path.lstrip("/"), host, port, t.token)
    head += "".join("%s: %s\r\n" % kv for kv in headers)
    head += "Content-Length: %d\r\n\r\n" % len(body)
    s.sendall(head.encode() + body)
    return s


def test_a_streaming_client_that_does_not_read_costs_the_gateway_little():
    t = h.jailed()
    try:
        t.start()
        kid = t.start_kernel()["id"]
        h.execute(t, kid, "1+1")
        before = h.rss_kib(t.proc.pid)
        seconds = 20
        body = ('{"code": %s, "timeout": 120}' % __import__("json").dumps(PRINT_AND_CLEAR % seconds)).encode()
        s = raw_request(t, "POST", "api/kernels/%s/execute" % kid, body,
                        headers=[("Accept", "application/x-ndjson"), ("Content-Type", "application/json")])
        peak = before
        end = time.monotonic() + seconds + 5
        while time.monotonic() < end:
            peak = max(peak, h.rss_kib(t.proc.pid))
            time.sleep(0.25)
        grown = peak - before
        print("the cell printed and cleared 64 KiB lines for %d s to a client that read nothing; "
              "the gateway's RSS grew by %d KiB" % (seconds, grown))
        assert grown < 48 << 10, "the gateway grew by %d KiB for a client that does not read" % grown
        # Everyone else is served meanwhile, and the kernel is free again once the cell is done.
        assert t.get("api").status_code == 200
        out = h.stdout_of(h.execute(t, kid, "print(6*7)", timeout=60))
        assert out.strip() == "42", out
        s.close()
        t.delete_kernel(kid)
    finally:
        t.stop()


def test_a_request_header_trickled_a_byte_at_a_time_is_cut_off():
    t = h.jailed()
    try:
        t.start()
        host, port = t.url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
        s = socket.create_connection((host, int(port)))
        s.settimeout(1)
        s.sendall(b"GET /api HTTP/1.1\r\nHost: x\r\n")
        started = time.monotonic()
        closed_after = None
        while time.monotonic() - started < 30:
            try:
                s.sendall(b"X-Slow: 1\r\n")
            except OSError:
                closed_after = time.monotonic() - started
                break
            try:
                if s.recv(4096) == b"":
                    closed_after = time.monotonic() - started
                    break
            except socket.timeout:
                pass
            except OSError:
                closed_after = time.monotonic() - started
                break
        print("a header trickled a line a second was cut off after %s s" % closed_after)
        assert closed_after is not None and closed_after < 20, \
            "the gateway held a trickled request header for %s s" % closed_after
        assert t.get("api").status_code == 200
    finally:
        t.stop()


def test_a_large_body_without_a_valid_token_is_refused_unread():
    # Hole 7: up to --max-body (64 MiB) was read before the token was checked.
    t = h.jailed()
    try:
        t.start()
        host, port = t.url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
        s = socket.create_connection((host, int(port)))
        s.settimeout(10)
        s.sendall(b"PUT /api/workspaces/default/files/big.bin HTTP/1.1\r\nHost: x\r\n"
                  b"Authorization: token not-a-valid-token\r\nContent-Length: 33554432\r\n\r\n" + b"x" * 65536)
        started = time.monotonic()
        try:
            answer = s.recv(4096)
        except socket.timeout:
            answer = b""
        took = time.monotonic() - started
        print("32 MiB announced with a bad token: %r after %.1f s" % (answer[:60], took))
        assert answer.startswith(b"HTTP/1.1 401"), "no refusal before the body: %r after %.1f s" % (answer[:60], took)
        s.close()
        # With its token, a body that size is read (and the upload lands).
        assert t.post("api/workspaces", json={"name": "up"}).status_code == 201
        r = t.api("PUT", "api/workspaces/up/files/big.bin", data=b"y" * (1 << 20))
        assert r.status_code in (200, 201), r.text
    finally:
        t.stop()
