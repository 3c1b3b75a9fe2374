# SPDX-License-Identifier: Apache-2.0
# jupyter_client as the reference: its Session builds/parses messages, its KernelSpecManager is the oracle.
"""The client does not know the kernel's HMAC key, so Session(key=b"") signs nothing; the gateway
signs what it forwards. Parsing replies with Session.deserialize checks the parts are what
jupyter_client itself accepts (valid JSON, ISO dates, header fields)."""
import datetime
import glob
import json
import os

import pytest
from jupyter_client.jsonutil import json_default
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.session import Session

from jupyter_ws import KernelWS, decode_v1_parts, encode_v1_parts


def local_ksm(target):
    ksm = KernelSpecManager()
    ksm.kernel_dirs = [target.kernels_dir] + list(ksm.kernel_dirs)
    return ksm


def expected_resources(resource_dir):
    keys = {f for f in ("kernel.js", "kernel.css") if os.path.exists(os.path.join(resource_dir, f))}
    for logo in glob.glob(os.path.join(resource_dir, "logo-*")):
        keys.add(os.path.splitext(os.path.basename(logo))[0])
    return keys


def test_kernelspecs_match_local_kernelspec_manager(target):
    ksm = local_ksm(target)
    local = ksm.get_all_specs()
    remote = target.get("api/kernelspecs").json()["kernelspecs"]
    assert set(remote) == set(local)
    for name, info in local.items():
        spec, rspec = info["spec"], remote[name]["spec"]
        for key in ("argv", "display_name", "language", "env"):
            assert rspec.get(key) == spec.get(key), (name, key)
        assert rspec.get("metadata", {}) == spec.get("metadata", {}), name
        assert set(remote[name]["resources"]) == expected_resources(info["resource_dir"]), name
        origin = "/".join(target.url.split("/", 3)[:3])
        for key, url in remote[name]["resources"].items():
            r = target.http.get(origin + url)
            assert r.status_code == 200, url
            fname = url.rsplit("/", 1)[1]
            with open(os.path.join(info["resource_dir"], fname), "rb") as f:
                assert r.content == f.read(), url


class SessionWS:
    """A KernelWS whose messages are built and parsed by jupyter_client's Session."""

    def __init__(self, target, kernel_id, protocol):
        self.session = Session(key=b"", username="cellgate-test")
        self.kws = KernelWS(target.url, target.token, kernel_id, protocol=protocol,
                            session_id=self.session.session)
        self.protocol = protocol

    def send(self, channel, msg_type, content):
        msg = self.session.msg(msg_type, content)
        if self.protocol == "v1":
            wire = self.session.serialize(msg)  # [<IDS|MSG>, signature, h, p, m, c]
            assert wire[1] == b""  # key unknown to the client: no signature
            self.kws.ws.send(encode_v1_parts(channel, wire[2:]), opcode=0x2)
        else:
            msg = dict(msg, channel=channel, buffers=[])
            self.kws.ws.send(json.dumps(msg, default=json_default))
        return msg["header"]["msg_id"]

    def recv(self, timeout=30):
        opcode, data = self.kws.recv_raw(timeout)
        if self.protocol == "v1":
            channel, parts = decode_v1_parts(data)
        else:
            frame = json.loads(data.decode("utf-8"))
            channel = frame["channel"]
            parts = [self.session.pack(frame[k])
                     for k in ("header", "parent_header", "metadata", "content")]
        msg = self.session.deserialize([b""] + parts)  # signature b"": auth is off (key=b"")
        return channel, msg

    def reply_to(self, msg_id, reply_type, timeout=30):
        while True:
            channel, msg = self.recv(timeout)
            if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == reply_type:
                return channel, msg

    def close(self):
        self.kws.close()


@pytest.mark.parametrize("proto", ["legacy", "v1"])
def test_session_roundtrip(target, shared_kernel, proto):
    c = SessionWS(target, shared_kernel["id"], proto)
    try:
        msg_id = c.send("shell", "kernel_info_request", {})
        channel, reply = c.reply_to(msg_id, "kernel_info_reply")
        assert channel == "shell"
        assert isinstance(reply["header"]["date"], datetime.datetime)  # parsed by jupyter_client
        assert reply["parent_header"]["session"] == c.session.session
        assert reply["content"]["status"] == "ok"
        msg_id = c.send("shell", "execute_request", {"code": "6*7", "silent": False})
        results, idle, reply = [], False, None
        while not (idle and reply):
            channel, m = c.recv()
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            if m["msg_type"] == "execute_result":
                results.append(m["content"]["data"]["text/plain"])
            elif m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                idle = True
            elif m["msg_type"] == "execute_reply":
                assert channel == "shell"
                reply = m
        assert results == ["42"]
        assert reply["content"]["status"] == "ok"
    finally:
        c.close()
