# SPDX-License-Identifier: Apache-2.0
# What a kernel's code can do to the gateway through the channels it owns.
import os
import select
import socket
import tempfile
import time

import pytest

import targets as tm
from conftest import cellgate_only
from jupyter_ws import KernelWS

# Runs in the kernel: swaps its control socket's path for a symlink to BAIT (atomically, so the
# gateway can never find the path missing), then closes the socket, which drops the gateway's
# connection: the gateway reconnects to the path within milliseconds.
SWAP = """
import json, os, ipykernel
info = json.load(open(ipykernel.get_connection_file()))
path = "%s-%d" % (info["ip"], info["control_port"])
os.symlink(BAIT, path + ".swap")
os.rename(path + ".swap", path)
get_ipython().kernel.control_stream.socket.close(linger=0)
print("swapped", os.readlink(path))
"""


def test_a_kernel_cannot_point_the_gateway_at_a_host_socket(target, new_kernel, connect):
    """A channel path is in the kernel's reach. Made a symlink to a host unix socket, the gateway
    would connect there as root and write what clients send (a confused deputy). It must check who
    listens (SO_PEERCRED) before sending a byte, and keep trying only the kernel."""
    cellgate_only(target, "the gateway's own channel connections")
    if target.spawner == "plain":
        pytest.skip("plain kernels run as the gateway's uid: no uid tells them from a host service")
    with tempfile.TemporaryDirectory(prefix="cg-bait-") as d:
        bait_path = os.path.join(d, "bait.sock")
        bait = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        bait.bind(bait_path)
        bait.listen(64)
        bait.setblocking(False)
        try:
            kid = new_kernel()["id"]
            c = connect(kid)
            res = c.execute("BAIT = %r\n%s" % (bait_path, SWAP))
            assert res.reply["content"]["status"] == "ok", res.reply
            assert res.stdout() == "swapped %s\n" % bait_path, res.iopub
            # The gateway retries every 5..50 ms: watch for two seconds.
            accepted, received = 0, b""
            conns = []
            deadline = time.monotonic() + 2
            while time.monotonic() < deadline:
                ready, _, _ = select.select([bait] + conns, [], [], 0.05)
                for s in ready:
                    if s is bait:
                        conn, _ = bait.accept()
                        conn.setblocking(False)
                        conns.append(conn)
                        accepted += 1
                        continue
                    try:
                        data = s.recv(4096)
                    except BlockingIOError:
                        continue
                    received += data
                    if not data:
                        conns.remove(s)
                        s.close()
            for s in conns:
                s.close()
            # The swap took effect (the gateway did connect), and nothing was written to the bait.
            assert accepted >= 1, "the gateway never reconnected the dropped channel"
            assert received == b"", received[:80]
            # The kernel still serves on its other channels.
            assert c.execute("1+1").result_text() == "2"
        finally:
            bait.close()


def test_an_output_over_the_kernel_message_bound_is_dropped_with_a_notice(target):
    """A kernel message over --max-kernel-message streams past the gateway unbuffered; the cell that
    asked gets a notice on stderr instead of silence, and the kernel keeps serving."""
    cellgate_only(target, "cellgate's bound on kernel messages")
    t = tm.CellgateTarget(target.binary, spawner=target.spawner, extra_args=["--max-kernel-message", "1M"])
    t.start()
    try:
        kid = t.start_kernel()["id"]
        c = KernelWS(t.url, t.token, kid)
        try:
            res = c.execute("import sys; print('x' * 3_000_000); sys.stdout.flush(); print('small')")
            assert res.reply["content"]["status"] == "ok", res.reply
            streams = [m["content"] for m in res.of_type("stream")]
            assert not any(len(s["text"]) > 1_000_000 for s in streams), [len(s["text"]) for s in streams]
            notices = [s for s in streams if s["name"] == "stderr" and "--max-kernel-message" in s["text"]]
            assert len(notices) == 1, streams
            assert "1 MiB was dropped" in notices[0]["text"], notices
            # Only the oversized message is lost: later output of the same cell arrives.
            assert "small\n" in res.stdout(), streams
            assert c.execute("1+1").result_text() == "2"
        finally:
            c.close()
        assert "dropped a kernel message over 1048576 bytes" in t.log_tail(200)
    finally:
        t.stop()


# Runs in the kernel: sends iopub messages signed with its own key whose parts are not what the
# protocol says (JSON objects) — the key proves only that the kernel sent them.
MALFORMED = r'''
import json
k = get_ipython().kernel
parent = json.dumps(k.get_parent()["header"], default=str).encode()
def send(header, parent_header, metadata, content):
    parts = [header, parent_header, metadata, content]
    k.iopub_socket.send_multipart([b"stream", b"<IDS|MSG>", k.session.sign(parts)] + parts)
def hdr():
    return json.dumps({"msg_id": "bad", "msg_type": "stream", "session": "s", "username": "u",
                       "date": "2026-01-01T00:00:00Z", "version": "5.3"}).encode()
ok = b'{"name": "stdout", "text": "fine"}'
for h, p, m, c in [(hdr(), parent, b"{}", b'{"name": "stdout", "text": "\xff\xfe"}'),
                   (hdr(), parent, b"{}", b"not json"), (hdr(), parent, b"{}", b""), (hdr(), parent, b"{}", b"[]"),
                   (hdr(), parent, b"not json", ok), (hdr(), b'"a string"', b"{}", ok),
                   (b"[]", parent, b"{}", ok), (b'{"msg_type": 5}', parent, b"{}", ok),
                   (hdr(), parent, b"{}", b'{"name": "stdout", "text": "' + b"[" * 200 + b'", "x": 1e-05}')]:
    send(h, p, m, c)
print("sent")
'''


@pytest.mark.parametrize("protocol", ["legacy", "v1"])
def test_malformed_kernel_messages_are_dropped_not_relayed(target, new_kernel, connect, protocol):
    """A client parses what the gateway relays: a kernel message whose header, parent_header,
    metadata or content is not a JSON object (or not UTF-8) is dropped, and never breaks the
    client's WebSocket (a legacy text frame with invalid UTF-8 is a protocol error, RFC 6455 8.1)."""
    cellgate_only(target, "cellgate's checks on kernel messages")
    kid = new_kernel()["id"]
    c = connect(kid, protocol=protocol)
    msg_id = c.send("shell", "execute_request", {"code": MALFORMED, "silent": False, "store_history": False,
                                                 "user_expressions": {}, "allow_stdin": False})
    got = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        opcode, data = c.recv_raw(30)
        m = c.decode(opcode, data)  # strict: UTF-8, JSON, and every dict a dict
        for part in ("header", "parent_header", "metadata", "content"):
            assert isinstance(m[part], dict), (part, m)
        got.append(m)
        if m["header"]["msg_type"] == "execute_reply" and m["parent_header"].get("msg_id") == msg_id:
            break
    texts = [m["content"].get("text", "") for m in got if m["header"]["msg_type"] == "stream"]
    assert texts.count("sent\n") == 1, texts
    # The one valid message of the lot (an exponent and deep brackets in a string) is relayed.
    assert any(t.startswith("[[[") for t in texts), texts
    assert not any(t == "fine" for t in texts), texts
    assert c.execute("1+1").result_text() == "2"
