# SPDX-License-Identifier: Apache-2.0
# GET /api/events: the gateway's events as Server-Sent Events. Same token auth as the API; a user
# sees their own kernels' and workspaces' events, an admin everyone's; Last-Event-ID resumes (and a
# resume from an id the gateway no longer has is told to resync); a reader that stops reading is
# dropped rather than buffered for; the events are also lines of the JSON log.
import http.client
import json
import os
import socket
import time
import urllib.parse

import pytest
import requests

import targets as targets_mod

BUFFER = 64  # --events-buffer: events kept for resuming


@pytest.fixture(scope="module")
def gw():
    path, why = targets_mod.cellgate_binary()
    if not path:
        pytest.fail("cellgate target required but " + why)
    tokens = {}

    def add_users(t):
        tokens["ana"] = t.add_user("ana", "--max-kernels", "1")
        tokens["bob"] = t.add_user("bob")
        tokens["cap"] = t.add_user("cap")
        tokens["root"] = t.add_user("root", "--admin")
        t.token = tokens["root"]
        t.http.headers["Authorization"] = "token " + t.token

    t = targets_mod.make_target("cellgate", pre_start=add_users, extra_args=["--events-buffer", str(BUFFER)])
    t.start()
    yield t, tokens
    t.stop()


class Stream:
    """One GET /api/events, read frame by frame."""

    def __init__(self, t, token, last_id=None, timeout=30):
        u = urllib.parse.urlsplit(t.url)
        self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
        headers = {"Authorization": "token " + token, "Accept": "text/event-stream"}
        if last_id:
            headers["Last-Event-ID"] = last_id
        self.conn.request("GET", u.path + "api/events", headers=headers)
        self.res = self.conn.getresponse()
        self.buf = b""

    def frame(self, timeout=30):
        """The next frame with data or an event name: {"id","event","data"}; keepalives are skipped."""
        deadline = time.monotonic() + timeout
        while True:
            end = self.buf.find(b"\n\n")
            if end >= 0:
                block, self.buf = self.buf[:end].decode(), self.buf[end + 2:]
                f = {}
                for line in block.split("\n"):
                    if line.startswith(":"):
                        continue
                    k, _, v = line.partition(": ")
                    f[k] = v
                if "event" in f or "data" in f:
                    if "data" in f:
                        f["data"] = json.loads(f["data"])
                    return f
                continue
            assert time.monotonic() < deadline, "no event within %ss; got %r" % (timeout, self.buf)
            chunk = self.res.read1(65536)
            assert chunk, "the stream ended"
            self.buf += chunk

    def until(self, event, pred=lambda d: True, timeout=60):
        seen = []
        deadline = time.monotonic() + timeout
        while True:
            f = self.frame(max(1, deadline - time.monotonic()))
            seen.append(f.get("event"))
            if f.get("event") == event and pred(f.get("data", {})):
                return f
            assert time.monotonic() < deadline, "no %s; saw %s" % (event, seen)

    def close(self):
        self.conn.close()


def api(t, token, method, path, **kw):
    headers = dict(kw.pop("headers", {}), Authorization="token " + token)
    return requests.request(method, t.url + path, headers=headers, timeout=120, **kw)


def test_events_need_a_token_and_a_well_formed_last_event_id(gw):
    t, tokens = gw
    assert requests.get(t.url + "api/events", timeout=10).status_code == 401
    assert requests.get(t.url + "api/events", headers={"Authorization": "token nope"}, timeout=10).status_code == 401
    for bad in ("abc", "1-", "-1", "1-2-3", "9" * 30 + "-1", "1 -2"):
        r = api(t, tokens["bob"], "GET", "api/events", headers={"Last-Event-ID": bad})
        assert r.status_code == 400, (bad, r.text)
        assert set(r.json()) >= {"reason", "message"}
    r = api(t, tokens["bob"], "POST", "api/events")
    assert r.status_code == 405
    s = Stream(t, tokens["bob"])
    try:
        assert s.res.status == 200
        assert s.res.getheader("Content-Type").startswith("text/event-stream")
        assert s.res.getheader("Cache-Control") == "no-store"
    finally:
        s.close()


def test_kernel_and_workspace_events_reach_their_owner_and_admins_only(gw):
    t, tokens = gw
    ana, bob, root = (Stream(t, tokens[n]) for n in ("ana", "bob", "root"))
    try:
        r = api(t, tokens["ana"], "POST", "api/kernels", json={"name": "python3"})
        assert r.status_code == 201, r.text
        kid = r.json()["id"]
        mine = lambda d: d.get("kernel_id") == kid  # noqa: E731
        for s in (ana, root):
            f = s.until("kernel_started", mine)
            assert f["data"]["owner"] == "ana" and f["data"]["kernelspec"] == "python3"
            assert f["data"]["path"] in ("cold", "fork_server", "warm_pool")
        # A second kernel is over ana's quota: refused, and told.
        assert api(t, tokens["ana"], "POST", "api/kernels", json={"name": "python3"}).status_code == 403
        f = ana.until("quota_refused")
        assert f["data"]["limit"] == "max_kernels"
        ex = api(t, tokens["ana"], "POST", "api/kernels/%s/execute" % kid, json={"code": "1"})
        assert ex.json()["status"] == "ok", ex.text
        assert api(t, tokens["ana"], "POST", "api/kernels/%s/pause" % kid).json()["paused"] is True
        ana.until("kernel_paused", mine)
        assert api(t, tokens["ana"], "POST", "api/kernels/%s/resume" % kid).json()["paused"] is False
        ana.until("kernel_resumed", mine)
        assert api(t, tokens["ana"], "POST", "api/kernels/%s/restart" % kid).status_code == 200
        assert ana.until("kernel_restarted", mine)["data"]["by"] == "ana"
        ws = "ev-" + os.urandom(3).hex()
        assert api(t, tokens["ana"], "POST", "api/workspaces", json={"name": ws}).status_code == 201
        assert api(t, tokens["ana"], "PUT", "api/workspaces/%s/files/a.txt" % ws, data=b"one").status_code in (200, 201, 204)
        snap = api(t, tokens["ana"], "POST", "api/workspaces/%s/snapshots" % ws, json={"label": "v1"}).json()["id"]
        f = root.until("snapshot", lambda d: d.get("workspace") == ws)
        assert f["data"]["snapshot"] == snap and f["data"]["owner"] == "ana"
        r = api(t, tokens["ana"], "POST", "api/workspaces/%s/snapshots/%s/restore" % (ws, snap), json={})
        assert r.status_code == 200, r.text
        ana.until("restore", lambda d: d.get("workspace") == ws and d.get("snapshot") == snap)
        assert api(t, tokens["ana"], "DELETE", "api/kernels/" + kid).status_code == 204
        root.until("kernel_stopped", mine)
        # bob saw none of it: the first thing his stream says is about his own kernel.
        r = api(t, tokens["bob"], "POST", "api/kernels", json={"name": "python3"})
        assert r.status_code == 201, r.text
        bid = r.json()["id"]
        f = bob.frame(60)
        assert f["event"] == "kernel_started" and f["data"]["kernel_id"] == bid and f["data"]["owner"] == "bob", f
        api(t, tokens["bob"], "DELETE", "api/kernels/" + bid)
    finally:
        for s in (ana, bob, root):
            s.close()
    # The same events are lines of the JSON log.
    with open(t.log_path, errors="replace") as f:
        logged = [json.loads(line.split("event=", 1)[1]) for line in f if "event={" in line]
    assert any(e["type"] == "kernel_paused" and e["kernel_id"] == kid for e in logged), logged[-5:]


def test_last_event_id_resumes_and_an_unknown_one_resyncs(gw):
    t, tokens = gw
    s = Stream(t, tokens["bob"])
    ws = "ev-" + os.urandom(3).hex()
    try:
        assert api(t, tokens["bob"], "POST", "api/workspaces", json={"name": ws}).status_code == 201
        api(t, tokens["bob"], "POST", "api/workspaces/%s/snapshots" % ws, json={"label": "one"})
        first = s.until("snapshot", lambda d: d.get("label") == "one")
    finally:
        s.close()
    # Missed while disconnected, then resumed from the last id seen.
    api(t, tokens["bob"], "POST", "api/workspaces/%s/snapshots" % ws, json={"label": "two"})
    s = Stream(t, tokens["bob"], last_id=first["id"])
    try:
        f = s.frame()
        assert f["event"] == "snapshot" and f["data"]["label"] == "two", f
    finally:
        s.close()
    # An id of another gateway process (epoch): what was missed cannot be known, so: resync.
    s = Stream(t, tokens["bob"], last_id="1-1")
    try:
        f = s.frame()
        assert f["event"] == "resync", f
    finally:
        s.close()


def test_event_streams_per_user_are_bounded(gw):
    t, tokens = gw
    streams = [Stream(t, tokens["cap"]) for _ in range(8)]
    try:
        assert all(s.res.status == 200 for s in streams)
        r = api(t, tokens["cap"], "GET", "api/events")
        assert r.status_code == 429 and set(r.json()) >= {"reason", "message"}, r.text
        streams.pop().close()
        deadline = time.monotonic() + 30
        while True:  # the gateway notices the closed stream at its next write (a keepalive at most)
            s = Stream(t, tokens["cap"], timeout=5)
            if s.res.status == 200:
                streams.append(s)
                break
            s.close()
            assert time.monotonic() < deadline, "a closed stream was never released"
            # a new event makes every stream write now
            api(t, tokens["cap"], "POST", "api/workspaces", json={"name": "ev-" + os.urandom(3).hex()})
            time.sleep(0.5)
        # Other users are not affected.
        other = Stream(t, tokens["ana"])
        assert other.res.status == 200
        other.close()
    finally:
        for s in streams:
            s.close()


def test_a_reader_that_stops_reading_is_dropped_not_buffered_for(gw):
    t, tokens = gw
    u = urllib.parse.urlsplit(t.url)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((u.hostname, u.port))
    sock.sendall(("GET %sapi/events HTTP/1.1\r\nHost: x\r\nAuthorization: token %s\r\n\r\n"
                  % (u.path, tokens["root"])).encode())
    r = api(t, tokens["ana"], "POST", "api/kernels", json={"name": "python3"})
    assert r.status_code == 201, r.text
    kid = r.json()["id"]
    try:
        # Events much faster than this reader reads (it reads nothing): its socket fills, the log
        # moves on past what it was sent, and the gateway drops it.
        dropped = False
        for i in range(2000):
            api(t, tokens["ana"], "POST", "api/kernels/%s/%s" % (kid, "pause" if i % 2 == 0 else "resume"))
            if i % 50 == 49:
                with open(t.log_path, errors="replace") as f:
                    dropped = "event stream dropped" in f.read()
                if dropped:
                    break
        assert dropped, "the gateway kept a reader that reads nothing after 2000 events"
        # What was in flight arrives, then the end of the connection.
        sock.settimeout(30)
        got = 0
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            got += len(chunk)
        assert got > 0
        # And the gateway serves on.
        assert api(t, tokens["ana"], "GET", "api/me").status_code == 200
    finally:
        sock.close()
        api(t, tokens["ana"], "POST", "api/kernels/%s/resume" % kid)
        api(t, tokens["ana"], "DELETE", "api/kernels/" + kid)
