#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# ws_interop: WebSocket frames made by jupyter_server's own serialisers, for ws_interop_check.
#
# Prints one JSON document: for each case, the ZMQ parts (hex) and the frames jupyter_server would
# send a browser for them: v1 (serialize_msg_to_ws_v1) and legacy (ZMQStreamHandler._reserialize_reply,
# i.e. Session.deserialize + json.dumps, or serialize_binary_message when there are buffers).
# It also decodes each frame back with deserialize_msg_from_ws_v1 / deserialize_binary_message as a
# self-check. Must run under Debian's /usr/bin/python3 (jupyter_server, jupyter_client).
import json
import sys
import types

from jupyter_client.session import Session

try:  # jupyter_server 2.x
    from jupyter_server.services.kernels.connection.base import (
        deserialize_binary_message,
        deserialize_msg_from_ws_v1,
        serialize_msg_to_ws_v1,
    )
    from jupyter_server.services.kernels.connection.channels import (
        ZMQChannelsWebsocketConnection as _Handler,
    )
except ImportError:  # jupyter_server 1.x (Debian 12 ships 1.23)
    from jupyter_server.base.zmqhandlers import (
        ZMQStreamHandler as _Handler,
        deserialize_binary_message,
        deserialize_msg_from_ws_v1,
        serialize_msg_to_ws_v1,
    )

DELIM = b"<IDS|MSG>"


def header(msg_id, msg_type, date="2026-11-29T19:04:05.123456Z"):
    return {"msg_id": msg_id, "msg_type": msg_type, "session": "sess-1", "username": "u",
            "date": date, "version": "5.3"}


CASES = [
    ("execute_request", "shell", header("m-1", "execute_request"), {}, {},
     {"code": "print('h\u00e9llo')\n", "silent": False, "store_history": True,
      "user_expressions": {}, "allow_stdin": True, "stop_on_error": True}, []),
    ("comm_msg_buffers", "shell", header("m-2", "comm_msg"), header("p-1", "comm_open"), {"k": [1, 2.5, None]},
     {"comm_id": "c1", "data": {"method": "update", "buffer_paths": [["a"], ["b"]]}},
     [b"\x00\x01\x02\xff", b"", b"second buffer"]),
    ("escapes_control", "control", header('m-"3"\\\n\t\x01', "interrupt_request"), {}, {}, {}, []),
    ("input_reply", "stdin", header("m-4", "input_reply"), header("p-4", "input_request"), {},
     {"value": "[{\"nested\": true}]"}, []),
    ("iopub_stream", "iopub", header("m-5", "stream"), header("p-5", "execute_request"), {},
     {"name": "stdout", "text": "line\r\n\u2603"}, []),
    ("iopub_many_buffers", "iopub", header("m-6", "display_data"), {}, {"transient": {}},
     {"data": {"application/octet-stream": ""}, "metadata": {}},
     [bytes([i]) * i for i in range(10)]),
]


def main():
    session = Session(key=b"interop-key")
    reserialize = types.SimpleNamespace(session=session)
    out = []
    for name, channel, hdr, parent, metadata, content, buffers in CASES:
        # Parts as a kernel's Session.pack would write them with ensure_ascii (the default of
        # json.dumps): ASCII text, so jupyter_server's re-serialisation reproduces them exactly.
        parts = [json.dumps(p).encode() for p in (hdr, parent, metadata, content)]
        msg_list = [DELIM, session.sign(parts)] + parts + buffers

        v1 = serialize_msg_to_ws_v1(parts + buffers, channel)
        legacy = _Handler._reserialize_reply(reserialize, msg_list, channel=channel)
        legacy_binary = isinstance(legacy, bytes)
        if not legacy_binary:
            legacy = legacy.encode("utf-8")

        back_channel, back_parts = deserialize_msg_from_ws_v1(v1)
        assert back_channel == channel and back_parts == parts + buffers, name
        if legacy_binary:
            back = deserialize_binary_message(legacy)
            assert [bytes(b) for b in back["buffers"]] == buffers, name
        else:
            back = json.loads(legacy)
        assert back["channel"] == channel and back["msg_type"] == hdr["msg_type"], name

        out.append({
            "name": name,
            "channel": channel,
            "parts": [p.hex() for p in parts],
            "buffers": [b.hex() for b in buffers],
            "v1": v1.hex(),
            "legacy": legacy.hex(),
            "legacy_binary": legacy_binary,
        })
    json.dump({"cases": out}, sys.stdout)


if __name__ == "__main__":
    main()
