# SPDX-License-Identifier: Apache-2.0
# The kernel WebSockets of one user that stop reading: each was bounded by --ws-queue, but a user's
# many sockets together were not (64 sockets, each 64 MiB: 4 GiB of gateway memory for one user).
# What one user's sockets queue together is now bounded too (4 x --ws-queue), past which the user's
# sockets with the most waiting are closed with 1008, their unsent output kept in their sessions' replay
# buffers.
import json
import socket
import threading
import time

import websocket

import hostile as h
import jupyter_ws as jws

SOCKETS = 8
# 14 MiB from each kernel: under one socket's 16 MiB, but 8 of them are well over the user's 64 MiB.
FLOOD = "line = 'x' * 65535\nfor i in range(14 * 16):\n    print(line)\n"


def how_it_ended(ws, timeout=10):
    """Reads ws to its end: "1008" (or the close code the gateway sent), "dropped" (no close frame),
    or "open" (nothing ended it within timeout)."""
    ws.settimeout(timeout)
    try:
        while True:
            op, frame = ws.recv_data_frame(True)
            if op == websocket.ABNF.OPCODE_CLOSE:
                return str(int.from_bytes(frame.data[:2], "big"))
    except websocket.WebSocketTimeoutException:
        return "open"
    except (websocket.WebSocketConnectionClosedException, OSError):
        return "dropped"


def test_a_users_sockets_together_are_bounded():
    t = h.jailed("--ws-queue", "16M")
    socks = []
    try:
        t.start()
        kids = [t.start_kernel()["id"] for _ in range(SOCKETS)]
        for kid in kids:
            url = jws.ws_url(t.url, kid, "s-" + kid)
            socks.append(websocket.create_connection(
                url, header=["Authorization: token %s" % t.token], timeout=30,
                sockopt=((socket.SOL_SOCKET, socket.SO_RCVBUF, 4096),)))
        before = h.rss_kib(t.proc.pid)
        # The floods run through REST; their iopub goes to every socket of the kernel, none read.
        for kid in kids:
            r = t.post("api/kernels/%s/execute" % kid, json={"code": FLOOD, "timeout": 60}, timeout=90)
            assert r.status_code == 200 and r.json()["status"] == "ok", r.text[:300]
        time.sleep(2)
        grown = h.rss_kib(t.proc.pid) - before
        # Now read: a socket the gateway closed ends after what it had sent, with a close frame 1008, or
        # (one whose write was stuck) without one.
        ends = [how_it_ended(s) for s in socks]
        print("%d sockets of one user, none reading, %d MiB of output each: gateway RSS +%d MiB; ended: %s" %
              (SOCKETS, 14, grown >> 10, ends))
        assert len(ends) - ends.count("open") >= 1, "one user's sockets queued %d x 14 MiB together with nothing closed" % SOCKETS
        assert t.get("api").status_code == 200
    finally:
        for s in socks:
            try:
                s.close()
            except Exception:
                pass
        t.stop()


def test_a_slow_socket_closed_mid_broadcast_leaves_the_kernels_other_sockets_serving():
    """Two sockets on one kernel, one not reading: the gateway closed the slow one (1008) while it
    handed a message to both, and went on into the slot the closed one had left (SIGSEGV of the whole
    gateway, every user's kernels and sockets with it, from one user's two sockets)."""
    t = h.jailed("--ws-queue", "4M")
    lines = 16 * 16
    try:
        t.start()
        kid = t.start_kernel()["id"]
        slow = websocket.create_connection(
            jws.ws_url(t.url, kid, "slow"), header=["Authorization: token %s" % t.token], timeout=30,
            sockopt=((socket.SOL_SOCKET, socket.SO_RCVBUF, 4096),))
        fast = jws.KernelWS(t.url, t.token, kid)
        got = []

        def read_fast():
            try:
                while sum(got) < lines * 65536:
                    m = fast.recv(timeout=60)
                    if m.get("channel") == "iopub" and jws.msg_type(m) == "stream":
                        got.append(len(m["content"]["text"]))
            except Exception as e:  # the gateway went away, or too slow: judged below
                print("the reading socket ended:", e)

        reader = threading.Thread(target=read_fast, daemon=True)
        reader.start()
        # 16 MiB at about 10 MiB/s: the reading socket keeps up, the other passes its 4 MiB in a second.
        code = "import time\nline = 'x' * 65535\nfor i in range(%d):\n    print(line)\n    time.sleep(0.006)\n" % lines
        try:
            r = t.post("api/kernels/%s/execute" % kid, json={"code": code, "timeout": 60}, timeout=90)
            status = r.status_code
        except Exception as e:
            status = "no answer (%s)" % e
        reader.join(60)
        time.sleep(0.5)
        print("execute: %s; the reading socket got %d of %d bytes; gateway exit status %s" %
              (status, sum(got), lines * 65536, t.proc.poll()))
        assert t.proc.poll() is None, "the gateway died (exit status %s) when it closed one of a kernel's two " \
                                      "sockets as too slow" % t.proc.poll()
        assert status == 200, status
        assert sum(got) == lines * 65536, "the kernel's reading socket missed output: %d bytes" % sum(got)
        slow.settimeout(10)
        closed = None
        try:
            while closed is None:
                op, frame = slow.recv_data_frame(True)
                if op == websocket.ABNF.OPCODE_CLOSE:
                    closed = frame.data[:2]
        except (websocket.WebSocketTimeoutException, websocket.WebSocketConnectionClosedException, OSError):
            pass
        assert closed == b"\x03\xf0", "the slow socket was not closed with 1008: %r" % closed
        fast.close()
        slow.close()
    finally:
        t.stop()


def test_a_users_stalled_sockets_give_their_budget_back_at_once():
    """A user's sockets that stopped reading held their part of the user's budget until the 30 s write
    stall dropped them, even after their kernels went quiet: in the meantime the user's one socket that
    reads was closed (1008) whenever a burst of its output queued behind its write. Those holding the
    most waiting are now the ones closed, at once."""
    t = h.jailed("--ws-queue", "8M")  # the user's sockets together: 32 MiB
    stalled_kernels = 4
    try:
        t.start()
        kids = [t.start_kernel()["id"] for _ in range(stalled_kernels + 1)]
        stalled = [websocket.create_connection(
            jws.ws_url(t.url, kid, "stalled-" + kid), header=["Authorization: token %s" % t.token], timeout=30,
            sockopt=((socket.SOL_SOCKET, socket.SO_RCVBUF, 4096),)) for kid in kids[:stalled_kernels]]
        # The reading socket takes its bytes slowly (a small receive buffer): a burst queues behind it.
        active = websocket.create_connection(
            jws.ws_url(t.url, kids[-1], "active"), header=["Authorization: token %s" % t.token], timeout=60,
            sockopt=((socket.SOL_SOCKET, socket.SO_RCVBUF, 16384),))
        # 7 MiB to each stalled socket, under its own 8 MiB: 28 of the user's 32 MiB; then they are quiet.
        started = time.monotonic()
        for kid in kids[:stalled_kernels]:
            r = t.post("api/kernels/%s/execute" % kid,
                       json={"code": "line = 'x' * 65535\nfor i in range(7 * 16):\n    print(line)\n", "timeout": 60},
                       timeout=90)
            assert r.status_code == 200 and r.json()["status"] == "ok", r.text[:300]
        time.sleep(1)
        # A 6 MiB burst of output for the socket that reads.
        burst = 6 * 16
        done = []

        def read_active():
            got, close = 0, None
            try:
                while got < burst * 65536:
                    op, frame = active.recv_data_frame(True)
                    if op == websocket.ABNF.OPCODE_CLOSE:
                        close = frame.data
                        break
                    if op == websocket.ABNF.OPCODE_TEXT:
                        m = json.loads(frame.data)
                        if m.get("channel") == "iopub" and m["header"]["msg_type"] == "stream":
                            got += len(m["content"]["text"])
            except Exception as e:
                close = repr(e)
            done.append((got, close))

        reader = threading.Thread(target=read_active, daemon=True)
        reader.start()
        r = t.post("api/kernels/%s/execute" % kids[-1],
                   json={"code": "line = 'y' * 65535\nfor i in range(%d):\n    print(line)\n" % burst, "timeout": 60},
                   timeout=90)
        assert r.status_code == 200, r.text[:300]
        reader.join(20)
        elapsed = time.monotonic() - started
        got, close = done[0] if done else (None, "no end")
        ends = [how_it_ended(s, 5) for s in stalled]
        print("after %.1f s: the reading socket got %s of %d bytes (close: %r); the stalled sockets ended: %s" %
              (elapsed, got, burst * 65536, close, ends))
        assert elapsed < 25, "too slow a host for this test: the write stall (30 s) would decide it"
        assert close is None and got == burst * 65536, (
            "the user's reading socket was closed (%r) after %s of %d bytes while their stalled sockets held "
            "the user's budget" % (close, got, burst * 65536))
        assert ends.count("open") < len(ends), "no stalled socket was closed: %s" % ends
        assert t.get("api").status_code == 200
        for s in stalled + [active]:
            s.close()
    finally:
        t.stop()
