# SPDX-License-Identifier: Apache-2.0
# Gateway limits: request head and body sizes, WebSocket message size, open WebSockets per user.
import base64
import os
import socket
import time

import pytest
import requests
import websocket

import targets as targets_mod
from conftest import selected_targets
from jupyter_ws import KernelWS

pytestmark = pytest.mark.skipif("cellgate" not in selected_targets(), reason="cellgate's limits")

MAX_HEADER = 8 * 1024
MAX_BODY = 4 * 1024
MAX_WS = 64 * 1024


@pytest.fixture(scope="module")
def gw():
    path, why = targets_mod.cellgate_binary()
    if not path:
        pytest.fail("cellgate target required but " + why)
    tokens = {}

    def add_users(t):
        tokens["admin"] = t.add_user("admin", "--admin")
        tokens["alice"] = t.add_user("alice")
        tokens["bob"] = t.add_user("bob")
        # alice's own limit, set after creation, wins over --max-connections-per-user.
        t.cli("user", "set-limits", "alice", "--max-connections", "1")
        t.token = tokens["admin"]
        t.http.headers["Authorization"] = "token " + t.token

    t = targets_mod.make_target("cellgate", pre_start=add_users, extra_args=[
        "--max-header", "8K", "--max-body", "4K", "--max-ws-message", "64K", "--max-connections-per-user", "2"])
    t.start()
    yield t, tokens
    t.stop()


def session(t, token):
    s = requests.Session()
    s.headers["Authorization"] = "token " + token
    return s


def test_header_over_the_limit_is_431(gw):
    t, _ = gw
    r = t.get("api", headers={"X-Padding": "a" * (MAX_HEADER + 100)})
    assert r.status_code == 431, (r.status_code, r.text)
    assert "--max-header" in r.json()["message"], r.json()
    # Just under the limit is fine, and the server keeps serving.
    assert t.get("api", headers={"X-Padding": "a" * (MAX_HEADER - 1024)}).status_code == 200


def test_body_over_the_limit_is_413(gw):
    t, _ = gw
    r = t.post("api/kernels", data=b"{" + b" " * (MAX_BODY + 1) + b"}",
               headers={"Content-Type": "application/json"})
    assert r.status_code == 413, (r.status_code, r.text)
    assert "--max-body" in r.json()["message"], r.json()
    # A body announced as larger than the limit is refused before it is sent in full.
    with socket.create_connection(("127.0.0.1", int(t.url.rsplit(":", 1)[1].strip("/"))), timeout=30) as s:
        s.sendall(b"POST /api/kernels HTTP/1.1\r\nHost: x\r\nAuthorization: token " + t.token.encode() +
                  b"\r\nContent-Length: 100000000\r\n\r\n{")
        answer = s.recv(65536)
    assert answer.startswith(b"HTTP/1.1 413"), answer
    assert t.get("api").status_code == 200


def test_websocket_message_over_the_limit_closes_with_1009(gw):
    t, _ = gw
    kid = t.start_kernel()["id"]
    try:
        ws = KernelWS(t.url, t.token, kid)
        try:
            ws.ws.send("x" * (MAX_WS + 1))
            # Raw frames: websocket-client's own close reply would fail (the server fails the
            # connection and tears it down at once) before it returned the close frame.
            ws.ws.settimeout(30)
            for _ in range(100):
                frame = ws.ws.recv_frame()
                if frame.opcode == websocket.ABNF.OPCODE_CLOSE:
                    break
            else:
                pytest.fail("no close frame")
            code = int.from_bytes(frame.data[:2], "big")
            assert code == 1009, (code, frame.data)
        finally:
            ws.close()
        # Under the limit: a kernel message with a 32 KiB string executes.
        ws = KernelWS(t.url, t.token, kid)
        try:
            res = ws.execute("s = '%s'\nprint(len(s))" % ("y" * (32 * 1024)))
            assert res.reply["content"]["status"] == "ok", res.reply
        finally:
            ws.close()
    finally:
        t.delete_kernel(kid)


def refused(t):
    """cellgate_requests_refused_total by reason, read from GET /metrics as an admin."""
    r = t.get("metrics")
    assert r.status_code == 200, r.text
    out = {}
    for line in r.text.splitlines():
        if line.startswith('cellgate_requests_refused_total{reason="'):
            out[line.split('"')[1]] = float(line.split()[-1])
    assert {"auth", "forbidden", "header_too_large", "body_too_large", "message_too_big"} <= set(out), r.text
    return out


def test_refusals_are_counted_by_reason(gw):
    """Each refusal the transport or the router makes moves its own series of
    cellgate_requests_refused_total by exactly one, and no other."""
    t, tokens = gw

    def provoked(reason, action):
        before = refused(t)
        action()
        after = refused(t)
        moved = {k: after[k] - before[k] for k in after if after[k] != before[k]}
        assert moved == {reason: 1}, (reason, moved)

    def too_big_message():
        ws = KernelWS(t.url, t.token, kid)
        try:
            ws.ws.send("x" * (MAX_WS + 1))
            ws.ws.settimeout(30)
            for _ in range(100):
                if ws.ws.recv_frame().opcode == websocket.ABNF.OPCODE_CLOSE:
                    break
        finally:
            ws.close()
        # The count is taken when the connection's read loop has ended.
        for _ in range(100):
            if refused(t)["message_too_big"] > before_ws:
                return
            time.sleep(0.05)

    provoked("header_too_large", lambda: t.get("api", headers={"X-Padding": "a" * (MAX_HEADER + 100)}))
    provoked("body_too_large", lambda: t.post("api/kernels", data=b"{" + b" " * (MAX_BODY + 1) + b"}",
                                              headers={"Content-Type": "application/json"}))
    provoked("auth", lambda: session(t, "wrong").get(t.url + "api/kernels"))
    provoked("auth", lambda: upgrade_refusal(t, "wrong", "k"))
    provoked("forbidden", lambda: session(t, tokens["alice"]).get(t.url + "metrics"))
    kid = t.start_kernel()["id"]
    try:
        before_ws = refused(t)["message_too_big"]
        provoked("message_too_big", too_big_message)
    finally:
        t.delete_kernel(kid)


def upgrade_refusal(t, token, kid):
    """The upgrade request as plain HTTP, to read the refusal's JSON body."""
    r = requests.get(t.url + "api/kernels/%s/channels" % kid, timeout=30, headers={
        "Authorization": "token " + token, "Connection": "Upgrade", "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode()})
    return r


def test_open_websockets_per_user_are_capped(gw):
    t, tokens = gw
    bob = session(t, tokens["bob"])
    kid = bob.post(t.url + "api/kernels", json={}, timeout=90).json()["id"]
    opened = []
    try:
        opened += [KernelWS(t.url, tokens["bob"], kid) for _ in range(2)]  # the default cap, 2
        r = upgrade_refusal(t, tokens["bob"], kid)
        assert r.status_code == 429, (r.status_code, r.text)
        assert "max_connections (2)" in r.json()["message"], r.json()
        with pytest.raises(websocket.WebSocketBadStatusException) as exc:
            KernelWS(t.url, tokens["bob"], kid)
        assert exc.value.status_code == 429
        # Closing one frees its slot.
        opened.pop().close()
        for _ in range(50):
            try:
                opened.append(KernelWS(t.url, tokens["bob"], kid))
                break
            except websocket.WebSocketBadStatusException:
                import time
                time.sleep(0.1)
        else:
            pytest.fail("slot not freed after a close")
        res = opened[-1].execute("print('still served')")
        assert res.reply["content"]["status"] == "ok"
    finally:
        for c in opened:
            c.close()
        bob.delete(t.url + "api/kernels/" + kid, timeout=90)


def test_a_users_own_connection_limit_wins(gw):
    t, tokens = gw
    alice = session(t, tokens["alice"])
    kid = alice.post(t.url + "api/kernels", json={}, timeout=90).json()["id"]
    first = KernelWS(t.url, tokens["alice"], kid)
    try:
        r = upgrade_refusal(t, tokens["alice"], kid)
        assert r.status_code == 429 and "max_connections (1)" in r.json()["message"], r.text
        # Another user's WebSocket counts against their own cap, not alice's.
        admin_ws = KernelWS(t.url, tokens["admin"], kid)
        admin_ws.close()
    finally:
        first.close()
        alice.delete(t.url + "api/kernels/" + kid, timeout=90)


@pytest.mark.parametrize("hand_picked,who,passes", [("short-hand-picked-token", "--token", False),
                                                    ("x" * 40, "--token", False),
                                                    ("x" * 40, "generated", True)])
def test_a_blocked_address_still_admits_generated_tokens(hand_picked, who, passes):
    """After too many failed authentications from an address, its requests get 429 for a minute —
    but a token the gateway generated (256 bits, as `cellgate user add` makes) cannot be guessed online,
    and on a shared address (a JupyterHub node) one client's failures must not lock the others out.
    A hand-picked --token may be a guessable phrase however long it is: it stays behind the block."""
    path, why = targets_mod.cellgate_binary()
    if not path:
        pytest.fail("cellgate target required but " + why)
    tokens = {}

    def add_user(t):
        if who == "generated":
            tokens["generated"] = t.add_user("someone", "--admin")
            # With users in the database --token is no longer one; the harness polls with this.
            t.http.headers["Authorization"] = "token " + tokens["generated"]
    t = targets_mod.make_target("cellgate", token=hand_picked, pre_start=add_user,
                                extra_args=["--auth-failures-per-minute", "3"])
    t.start()
    try:
        valid = tokens.get("generated", hand_picked)
        assert session(t, valid).get(t.url + "api/kernels").status_code == 200
        for _ in range(3):
            assert session(t, "wrong").get(t.url + "api/kernels").status_code == 401
        assert session(t, "wrong").get(t.url + "api/kernels").status_code == 429
        assert session(t, "y" * 64).get(t.url + "api/kernels").status_code == 429  # a wrong long one
        r = session(t, valid).get(t.url + "api/kernels")
        assert r.status_code == (200 if passes else 429), (r.status_code, r.text)
    finally:
        t.stop()
