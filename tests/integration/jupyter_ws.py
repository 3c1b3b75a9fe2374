# SPDX-License-Identifier: Apache-2.0
# Jupyter kernel WebSocket client: our own codec for both framings plus a small blocking client.
"""Codec and client for /api/kernels/{id}/channels.

Written from the framing spec (jupyter-gateway-contract.md section 5), not from jupyter_server's
code, so that the codec can be cross-checked against jupyter_server's own functions
(test_codec.py) and then used to judge a gateway.

- legacy (no subprotocol): text frame = JSON message with "channel"; with buffers a binary frame:
  uint32 BE nbufs, nbufs uint32 BE offsets, JSON without "buffers", raw buffers.
- v1.kernel.websocket.jupyter.org: binary frame: uint64 LE n, n uint64 LE offsets, then
  channel, header, parent_header, metadata, content, buffers...
"""
import datetime
import json
import struct
import time
import uuid

import websocket

V1 = "v1.kernel.websocket.jupyter.org"
CHANNELS = ("shell", "iopub", "stdin", "control")


# ---------------------------------------------------------------------------- legacy framing

def encode_legacy(msg):
    """msg: dict with header, parent_header, metadata, content, channel, buffers.

    Returns (payload, opcode): str text frame without buffers, bytes binary frame with them."""
    body = {k: v for k, v in msg.items() if k != "buffers"}
    buffers = [bytes(b) for b in msg.get("buffers") or []]
    if not buffers:
        body["buffers"] = []
        return json.dumps(body), websocket.ABNF.OPCODE_TEXT
    parts = [json.dumps(body).encode("utf-8")] + buffers
    nbufs = len(parts)
    offsets = [4 * (nbufs + 1)]
    for part in parts[:-1]:
        offsets.append(offsets[-1] + len(part))
    head = struct.pack("!%dI" % (nbufs + 1), nbufs, *offsets)
    return head + b"".join(parts), websocket.ABNF.OPCODE_BINARY


def decode_legacy(frame):
    """Text (str) or binary (bytes) legacy frame -> message dict with bytes buffers."""
    if isinstance(frame, str):
        msg = json.loads(frame)
        msg["buffers"] = [bytes(b) if isinstance(b, (bytes, bytearray)) else b
                          for b in msg.get("buffers") or []]
        return msg
    if len(frame) < 8:
        raise ValueError("legacy binary frame too short: %d bytes" % len(frame))
    (nbufs,) = struct.unpack("!I", frame[:4])
    if nbufs < 1 or 4 * (nbufs + 1) > len(frame):
        raise ValueError("legacy binary frame: bad nbufs %d" % nbufs)
    offsets = list(struct.unpack("!%dI" % nbufs, frame[4:4 * (nbufs + 1)]))
    if offsets[0] != 4 * (nbufs + 1) or offsets != sorted(offsets) or offsets[-1] > len(frame):
        raise ValueError("legacy binary frame: bad offsets %r" % offsets)
    ends = offsets[1:] + [len(frame)]
    parts = [frame[s:e] for s, e in zip(offsets, ends)]
    msg = json.loads(parts[0].decode("utf-8"))
    msg["buffers"] = [bytes(p) for p in parts[1:]]
    return msg


# -------------------------------------------------------------------------------- v1 framing

def encode_v1_parts(channel, parts):
    """channel str, parts: [header, parent, metadata, content, *buffers] as bytes."""
    chan = channel.encode("utf-8")
    n = len(parts) + 2
    offsets = [8 * (n + 1), 8 * (n + 1) + len(chan)]
    for part in parts:
        offsets.append(offsets[-1] + len(part))
    head = struct.pack("<%dQ" % (n + 1), n, *offsets)
    return head + chan + b"".join(bytes(p) for p in parts)


def encode_v1(msg):
    parts = [json.dumps(msg[k]).encode("utf-8")
             for k in ("header", "parent_header", "metadata", "content")]
    return encode_v1_parts(msg["channel"], parts + [bytes(b) for b in msg.get("buffers") or []])


def decode_v1_parts(frame):
    """bytes -> (channel, [header, parent, metadata, content, *buffers] as bytes)."""
    if len(frame) < 8:
        raise ValueError("v1 frame too short: %d bytes" % len(frame))
    (n,) = struct.unpack("<Q", frame[:8])
    if n < 6 or 8 * (n + 1) > len(frame):
        raise ValueError("v1 frame: bad offset_number %d" % n)
    offsets = list(struct.unpack("<%dQ" % n, frame[8:8 * (n + 1)]))
    if offsets[0] != 8 * (n + 1) or offsets != sorted(offsets) or offsets[-1] != len(frame):
        raise ValueError("v1 frame: bad offsets %r (len %d)" % (offsets, len(frame)))
    channel = frame[offsets[0]:offsets[1]].decode("utf-8")
    parts = [frame[offsets[i]:offsets[i + 1]] for i in range(1, n - 1)]
    return channel, parts


def decode_v1(frame):
    channel, parts = decode_v1_parts(frame)
    msg = {k: json.loads(p.decode("utf-8")) if p else {}
           for k, p in zip(("header", "parent_header", "metadata", "content"), parts[:4])}
    msg["channel"] = channel
    msg["buffers"] = [bytes(b) for b in parts[4:]]
    return msg


# ----------------------------------------------------------------------------------- messages

def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")


def make_msg(msg_type, content, channel, session, buffers=(), metadata=None, parent=None):
    header = {"msg_id": uuid.uuid4().hex, "session": session, "username": "cellgate-test",
              "date": now_iso(), "msg_type": msg_type, "version": "5.3"}
    return {"header": header, "msg_id": header["msg_id"], "msg_type": msg_type,
            "parent_header": parent or {}, "metadata": metadata or {}, "content": content,
            "channel": channel, "buffers": list(buffers)}


def msg_type(msg):
    return msg.get("header", {}).get("msg_type") or msg.get("msg_type")


def parent_id(msg):
    return (msg.get("parent_header") or {}).get("msg_id")


class ExecResult:
    """Everything an execute_request produced, in arrival order."""

    def __init__(self, msg_id, reply, iopub, others):
        self.msg_id, self.reply, self.iopub, self.others = msg_id, reply, iopub, others

    def of_type(self, t):
        return [m for m in self.iopub if msg_type(m) == t]

    def stdout(self):
        return "".join(m["content"]["text"] for m in self.of_type("stream")
                       if m["content"]["name"] == "stdout")

    def result_text(self):
        res = self.of_type("execute_result")
        return res[0]["content"]["data"].get("text/plain") if res else None

    def states(self):
        return [m["content"]["execution_state"] for m in self.of_type("status")]


def ws_url(http_url, kernel_id, session_id, token=None):
    url = http_url.replace("https://", "wss://", 1).replace("http://", "ws://", 1).rstrip("/")
    url += "/api/kernels/%s/channels?session_id=%s" % (kernel_id, session_id)
    if token:
        url += "&token=" + token
    return url


class KernelWS:
    """Blocking client of one kernel's channels WebSocket.

    protocol: "legacy" (offer nothing) or "v1" (offer V1). Every received message is appended
    to `seen`; wait_for() scans unconsumed messages first, so nothing is lost between calls."""

    def __init__(self, base_url, token, kernel_id, protocol="legacy", session_id=None,
                 auth="header", timeout=60, extra_headers=(), cafile=None):
        self.session_id = session_id or uuid.uuid4().hex
        self.protocol = protocol
        headers = list(extra_headers)
        if auth == "header":
            headers.append("Authorization: token %s" % token)
        url = ws_url(base_url, kernel_id, self.session_id, token if auth == "query" else None)
        kwargs = {"header": headers, "timeout": timeout, "skip_utf8_validation": True}
        if protocol == "v1":
            kwargs["subprotocols"] = [V1]
        if cafile:  # wss:// verified against this CA (the test's self-signed certificate)
            import ssl
            kwargs["sslopt"] = {"cert_reqs": ssl.CERT_REQUIRED, "ca_certs": cafile}
        self.ws = websocket.create_connection(url, **kwargs)
        self.selected = self.ws.getsubprotocol()
        self.seen = []
        self.pending = []
        self.close_frame = None

    # -- transport
    def send_msg(self, msg):
        if self.protocol == "v1":
            self.ws.send(encode_v1(msg), opcode=websocket.ABNF.OPCODE_BINARY)
        else:
            payload, opcode = encode_legacy(msg)
            self.ws.send(payload, opcode=opcode)

    def send(self, channel, msg_type_, content, buffers=(), metadata=None):
        msg = make_msg(msg_type_, content, channel, self.session_id, buffers, metadata)
        self.send_msg(msg)
        return msg["header"]["msg_id"]

    def recv_raw(self, timeout):
        """Next data frame as (opcode, payload); raises on close/timeout."""
        deadline = time.monotonic() + timeout
        while True:
            # Re-arm each time: control frames (server pings) must not extend the wait.
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no frame within %.1fs" % timeout)
            self.ws.settimeout(left)
            try:
                opcode, frame = self.ws.recv_data_frame(control_frame=True)
            except websocket.WebSocketTimeoutException as e:
                raise TimeoutError("no frame within %.1fs" % timeout) from e
            if opcode == websocket.ABNF.OPCODE_CLOSE:
                self.close_frame = frame.data
                raise websocket.WebSocketConnectionClosedException("close frame received")
            if opcode in (websocket.ABNF.OPCODE_PING, websocket.ABNF.OPCODE_PONG):
                if opcode == websocket.ABNF.OPCODE_PONG:
                    return opcode, frame.data
                continue
            return opcode, frame.data

    def decode(self, opcode, data):
        if self.protocol == "v1":
            if opcode != websocket.ABNF.OPCODE_BINARY:
                raise AssertionError("v1 protocol but server sent a text frame: %r" % data[:200])
            return decode_v1(data)
        if opcode == websocket.ABNF.OPCODE_TEXT:
            return decode_legacy(data.decode("utf-8"))
        return decode_legacy(data)

    def recv(self, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no message within %.1fs" % timeout)
            opcode, data = self.recv_raw(left)
            if opcode == websocket.ABNF.OPCODE_PONG:
                continue
            msg = self.decode(opcode, data)
            self.seen.append(msg)
            return msg

    def wait_for(self, pred, timeout=30):
        for i, m in enumerate(self.pending):
            if pred(m):
                return self.pending.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("expected message not seen within %.1fs; got types %r"
                                   % (timeout, [(m.get("channel"), msg_type(m))
                                                for m in self.pending[-20:]]))
            m = self.recv(left)
            if pred(m):
                return m
            self.pending.append(m)

    def request(self, channel, msg_type_, content, timeout=30, buffers=()):
        msg_id = self.send(channel, msg_type_, content, buffers)
        want = msg_type_.replace("_request", "_reply")
        # The reply comes on the request's channel (shutdown_reply is also broadcast on iopub).
        return self.wait_for(lambda m: parent_id(m) == msg_id and msg_type(m) == want
                             and m.get("channel") == channel, timeout)

    def execute(self, code, timeout=60, allow_stdin=False, stdin_handler=None, silent=False,
                stop_on_error=True):
        """Send execute_request; collect its iopub until status idle and the execute_reply.

        Code that raises should pass stop_on_error=False: otherwise ipykernel aborts execute
        requests that reach it just after the error (reply status "aborted", no output), which
        a fast gateway makes likely for the next request."""
        msg_id = self.send("shell", "execute_request", {
            "code": code, "silent": silent, "store_history": not silent,
            "user_expressions": {}, "allow_stdin": allow_stdin, "stop_on_error": stop_on_error})
        return self.collect(msg_id, timeout, stdin_handler)

    def collect(self, msg_id, timeout=60, stdin_handler=None):
        reply, iopub, others, idle = None, [], [], False
        deadline = time.monotonic() + timeout
        while reply is None or not idle:
            left = deadline - time.monotonic()
            m = self.wait_for(lambda x: parent_id(x) == msg_id, max(left, 0))
            t = msg_type(m)
            if m.get("channel") == "iopub":
                iopub.append(m)
                if t == "status" and m["content"]["execution_state"] == "idle":
                    idle = True
            elif t == "execute_reply":
                reply = m
            elif t == "input_request" and stdin_handler:
                others.append(m)
                stdin_handler(self, m)
            else:
                others.append(m)
        return ExecResult(msg_id, reply, iopub, others)

    def close(self):
        try:
            self.ws.close()
        except Exception:
            pass


def ping(kws, payload=b"cellgate-ping", timeout=10):
    """Send a ping; return the pong payload. Data frames arriving meanwhile are kept."""
    kws.ws.ping(payload)
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no pong within %.1fs" % timeout)
        opcode, data = kws.recv_raw(left)
        if opcode == websocket.ABNF.OPCODE_PONG:
            return data
        msg = kws.decode(opcode, data)
        kws.seen.append(msg)
        kws.pending.append(msg)
