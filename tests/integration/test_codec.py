# SPDX-License-Identifier: Apache-2.0
# Our WebSocket codec (jupyter_ws.py) cross-checked against jupyter_server 1.23's own functions.
"""No server needed: proves the codec the other tests use to judge gateways is itself right."""
import json
import os
import struct
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jupyter_ws as jws  # noqa: E402
from jupyter_server.base import zmqhandlers as zh  # noqa: E402

MSG = jws.make_msg("comm_msg", {"comm_id": "c1", "data": {"x": "é"}}, "shell", "sess",
                   buffers=[b"\x00\x01\x02", b"", b"tail\xff"])


def test_legacy_binary_matches_jupyter_server():
    ours, opcode = jws.encode_legacy(MSG)
    assert isinstance(ours, bytes)
    theirs = zh.deserialize_binary_message(ours)
    assert theirs["buffers"] == MSG["buffers"]
    assert theirs["content"] == MSG["content"] and theirs["channel"] == "shell"
    back = jws.decode_legacy(zh.serialize_binary_message(dict(MSG, buffers=MSG["buffers"])))
    assert back["buffers"] == MSG["buffers"] and back["content"] == MSG["content"]
    (nbufs,) = struct.unpack("!I", ours[:4])
    assert nbufs == 4  # JSON part + 3 buffers, big-endian


def test_legacy_text_without_buffers():
    text, _ = jws.encode_legacy(dict(MSG, buffers=[]))
    assert isinstance(text, str)
    assert jws.decode_legacy(text)["content"] == MSG["content"]


def test_v1_matches_jupyter_server():
    ours = jws.encode_v1(MSG)
    channel, parts = zh.deserialize_msg_from_ws_v1(ours)
    assert channel == "shell"
    assert [json.loads(p) for p in parts[:4]] == [MSG["header"], MSG["parent_header"],
                                                   MSG["metadata"], MSG["content"]]
    assert parts[4:] == MSG["buffers"]
    parts_in = [json.dumps(MSG[k]).encode() for k in ("header", "parent_header", "metadata",
                                                        "content")] + MSG["buffers"]
    theirs = zh.serialize_msg_to_ws_v1(parts_in, "iopub")
    assert jws.decode_v1_parts(theirs) == ("iopub", parts_in)


def test_v1_worked_example_offsets():
    h, p, m, c = b'{"a":1}', b"{}", b"{}", b'{"code":"1+1"}'
    frame = jws.encode_v1_parts("shell", [h, p, m, c])
    n, *offs = struct.unpack("<7Q", frame[:56])
    assert n == 6
    H, P, M, C = map(len, (h, p, m, c))
    assert offs == [56, 61, 61 + H, 61 + H + P, 61 + H + P + M, 61 + H + P + M + C]


@pytest.mark.parametrize("bad", [b"", b"\x01\x00\x00\x00\x00\x00\x00\x00",
                                 struct.pack("<Q", 6) + b"\x00" * 48])
def test_v1_rejects_malformed(bad):
    with pytest.raises(ValueError):
        jws.decode_v1_parts(bad)
