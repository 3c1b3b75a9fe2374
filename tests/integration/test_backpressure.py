# SPDX-License-Identifier: Apache-2.0
# Slow clients: a client that stops reading is closed (1008) and resumes on reconnect without loss.
import struct
import time
import uuid

import pytest
import websocket

import targets as tm
from conftest import cellgate_only
from jupyter_ws import KernelWS, msg_type, parent_id

MB = 1 << 20
PRINT_MB = 12
CODE = ("import sys\n_l = 'y' * 1023 + '\\n'\nfor _ in range(%d):\n    sys.stdout.write(_l)\n"
        "sys.stdout.flush()\n" % (PRINT_MB * 1024))


@pytest.fixture
def small_queue_target(target):
    cellgate_only(target, "the write queue bound and replay buffer are cellgate's")
    t = tm.CellgateTarget(target.binary, spawner=target.spawner,
                          extra_args=["--ws-queue", "1M", "--replay-buffer", "64M"])
    t.start()
    yield t
    t.stop()


def drain(ws, msg_id, stream, until_idle, timeout=120):
    """Reads until the connection closes (or, with until_idle, until the cell's idle status);
    stream text goes into stream[header msg_id] (a message resent after a broken frame counts once)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            m = ws.recv(timeout=max(deadline - time.monotonic(), 0.1))
        except (websocket.WebSocketException, ConnectionError, OSError):
            return False
        if parent_id(m) != msg_id:
            continue
        if msg_type(m) == "stream" and m["content"]["name"] == "stdout":
            stream[m["header"]["msg_id"]] = m["content"]["text"]
        if until_idle and msg_type(m) == "status" and m["content"]["execution_state"] == "idle":
            return True
    raise TimeoutError("cell output not complete within %ss" % timeout)


def test_slow_client_is_closed_then_resumes_without_loss(small_queue_target):
    run_slow_client(small_queue_target, CODE)


# Six separate stream messages of 2 MiB: what the first connection cannot take goes to the replay buffer
# as several messages, together far more than --ws-queue, and the reconnect must get all of them (the
# replay used to count against the write queue, so the reconnect was closed with 1008 at once).
CHUNKED = ("import sys\n_c = ('z' * 1023 + '\\n') * 2048\nfor _ in range(%d):\n    sys.stdout.write(_c)\n"
           "    sys.stdout.flush()\n" % (PRINT_MB // 2))


def test_replay_larger_than_the_write_queue_reaches_the_reconnect(small_queue_target):
    run_slow_client(small_queue_target, CHUNKED)


def run_slow_client(t, code):
    kid = t.start_kernel()["id"]
    session = uuid.uuid4().hex
    a = KernelWS(t.url, t.token, kid, session_id=session)
    a.request("shell", "kernel_info_request", {})
    msg_id = a.send("shell", "execute_request", {
        "code": code, "silent": False, "store_history": False, "user_expressions": {},
        "allow_stdin": False, "stop_on_error": True})
    time.sleep(8)  # not reading: the socket buffers fill, then the gateway's 1 MiB queue overflows
    stream = {}
    assert drain(a, msg_id, stream, until_idle=False) is False
    assert a.close_frame is not None and struct.unpack("!H", a.close_frame[:2])[0] == 1008, a.close_frame
    # What the queue could not hold went to the session's replay buffer: at least the message that
    # overflowed it, and everything after (the cell's idle status among them).
    b = KernelWS(t.url, t.token, kid, session_id=session)
    assert drain(b, msg_id, stream, until_idle=True) is True
    assert sum(len(x) for x in stream.values()) == PRINT_MB * MB  # every byte, once
    b.close()
    t.delete_kernel(kid)
