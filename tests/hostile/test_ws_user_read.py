# SPDX-License-Identifier: Apache-2.0
# Hole 7 of issue 20, the inbound side: each WebSocket message from a client may be --max-ws-message
# (256 MiB) long, and the gateway holds it whole while it reads it; a user's 64 sockets each sending
# one at once made the gateway hold 64 x 256 MiB for that user. What one user's messages being read
# hold together is now bounded (--ws-read-per-user, twice --max-ws-message by default), charged to
# that user: the socket whose message does not fit is closed with 1009. A normal large message still
# goes through, and another user's sockets are not affected.
import socket
import struct
import threading
import time
import uuid

import websocket

import hostile as h
import jupyter_ws as jws
import targets as tm
from test_user_tables import with_users

MIB = 1 << 20
SOCKETS = 8
DECLARED = 60 * MIB  # each message's length, under --max-ws-message 64M
SENT = 56 * MIB      # what each socket sends of it, then holds
BIG_CELL = 20 * MIB  # a normal large message: an execute_request carrying a 20 MiB literal


def open_socket(t, token, kid):
    url = jws.ws_url(t.url, kid, "s-" + uuid.uuid4().hex)
    return websocket.create_connection(url, header=["Authorization: token %s" % token], timeout=60)


def send_part_of_a_message(ws, outcome, i):
    """A binary frame declaring DECLARED bytes (client frames are masked, RFC 6455 5.3: a zero key),
    of which SENT are sent, then nothing: the gateway holds what it read."""
    try:
        ws.sock.sendall(struct.pack("!BBQ", 0x82, 0x80 | 127, DECLARED) + b"\0\0\0\0")
        chunk = b"x" * MIB
        for _ in range(SENT // MIB):
            ws.sock.sendall(chunk)
        outcome[i] = "sent"
    except OSError as e:
        outcome[i] = "send failed: %s" % e


def close_code(ws, timeout=10):
    """The close code the gateway sent on ws, or None."""
    ws.settimeout(timeout)
    try:
        while True:
            op, frame = ws.recv_data_frame(True)
            if op == websocket.ABNF.OPCODE_CLOSE:
                return struct.unpack("!H", frame.data[:2])[0] if len(frame.data) >= 2 else None
    except (websocket.WebSocketTimeoutException, websocket.WebSocketConnectionClosedException, OSError):
        return None


def big_cell(kws):
    r = kws.execute("s = '%s'\nprint(len(s))" % ("a" * BIG_CELL), timeout=120)
    return r.reply["content"]["status"], r.stdout().strip()


def test_a_users_messages_being_read_are_bounded_together():
    t = h.jailed("--max-ws-message", "64M", ws_read_per_user="128M")
    t.pre_start = with_users("alice", "mallory")
    socks = []
    try:
        t.start()
        alice = tm.TokenClient(t, "alice", t.tokens["alice"])
        mallory = tm.TokenClient(t, "mallory", t.tokens["mallory"])
        mkid = mallory.api("POST", "api/kernels", json={"name": "python3"}).json()["id"]
        akid = alice.api("POST", "api/kernels", json={"name": "python3"}).json()["id"]
        socks = [open_socket(t, mallory.token, mkid) for _ in range(SOCKETS)]
        time.sleep(1)
        before = h.rss_kib(t.proc.pid)
        outcome = [None] * SOCKETS
        threads = [threading.Thread(target=send_part_of_a_message, args=(s, outcome, i)) for i, s in enumerate(socks)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(120)
        time.sleep(2)
        grown = (h.rss_kib(t.proc.pid) - before) >> 10
        print("mallory's %d sockets each sent %d MiB of a %d MiB message at once: gateway RSS +%d MiB; %s" %
              (SOCKETS, SENT >> 20, DECLARED >> 20, grown, outcome))

        # Meanwhile another user's socket works, and carries a normal large message.
        kws = jws.KernelWS(t.url, alice.token, akid)
        try:
            assert kws.execute("print(1 + 1)").stdout().strip() == "2"
            assert big_cell(kws) == ("ok", str(BIG_CELL))
        finally:
            kws.close()

        assert grown < 128 + 64, (
            "one user's %d sockets made the gateway hold %d MiB of messages being read (ws-read-per-user 128M)" %
            (SOCKETS, grown))
        codes = [close_code(s) for s in socks]
        print("close codes of mallory's sockets:", codes)
        assert codes.count(1009) >= SOCKETS - 128 * MIB // DECLARED, codes

        # Closed sockets give their budget back: mallory's next large message goes through.
        for s in socks:
            s.close()
        socks = []
        time.sleep(1)
        kws = jws.KernelWS(t.url, mallory.token, mkid)
        try:
            assert big_cell(kws) == ("ok", str(BIG_CELL))
        finally:
            kws.close()
        assert t.get("api").status_code == 200
    finally:
        for s in socks:
            try:
                s.sock.shutdown(socket.SHUT_RDWR)
                s.close()
            except Exception:
                pass
        t.stop()
