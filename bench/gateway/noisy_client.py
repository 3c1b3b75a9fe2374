# SPDX-License-Identifier: Apache-2.0
# noisy_client: the noisy-neighbour bench's calls to the gateway, bounded and tolerant (issue 20).
"""A benchmark is not a test: on a slow host (the project's CI, 2x slower than the dev VM, under
ctest -j2) a round trip that fails or times out is a finding to count and print, not an exception
that loses every figure. What stays fatal (Fatal) is the gateway itself dying or not answering, or
not starting a kernel: the bench then exits non-zero with one line saying so.

  call(client, ...)   one REST call with a timeout: a Reply, never an exception
  gateway_gone(t)     None while the gateway runs and answers, else why not
  Alice               one user's `1+1` round trips over a kernel WebSocket: a failed one is counted
                      (phase, ms, why) and the connection reopened for the next
  KeepAlive           pings that WebSocket while the bench does something else: the gateway closes a
                      connection from which nothing came for 2x --ws-ping-interval (60 s), which the
                      drain after the hostile phase outlasts on a slow host
"""
import threading
import time

import requests
import websocket

import jupyter_ws as jws


class Fatal(Exception):
    """A real failure, not a figure: the gateway died, stopped answering, or did not start a kernel."""


class Reply:
    def __init__(self, status=None, body=None, text="", error=""):
        self.status, self.body, self.text, self.error = status, body, text, error

    @property
    def ok(self):
        return self.status in (200, 201) and isinstance(self.body, dict)

    def get(self, key, default=None):
        return self.body.get(key, default) if isinstance(self.body, dict) else default

    def __str__(self):
        if self.status is None:
            return "no answer (%s)" % self.error
        return "HTTP %d: %s" % (self.status, " ".join(self.text.split())[:200])


def call(client, method, path, timeout, **kw):
    """client: a targets.Target or TokenClient. Never raises: a failure is a Reply whose str says it."""
    try:
        r = client.api(method, path, timeout=timeout, **kw)
    except (requests.RequestException, RuntimeError) as e:  # RuntimeError: Target.api saw the gateway dead
        return Reply(error="%s %s: %s: %s" % (method, path, type(e).__name__, str(e).splitlines()[0][:200]
                                             if str(e) else ""))
    try:
        body = r.json()
    except ValueError:
        body = None
    return Reply(r.status_code, body, r.text)


def gateway_gone(t, tries=3, timeout=30):
    """None when the gateway process runs and answers GET api/kernelspecs, else why not."""
    why = ""
    for i in range(tries):
        if t.proc is None or t.proc.poll() is not None:
            return "the gateway exited (rc=%s)" % (t.proc.returncode if t.proc is not None else "?")
        r = call(t, "GET", "api/kernelspecs", timeout)
        if r.status == 200:
            return None
        why = str(r)
        if i + 1 < tries:
            time.sleep(2)
    return "the gateway stopped answering: %d tries of GET api/kernelspecs (%d s each): %s" % (tries, timeout, why)


# What a broken or stalled WebSocket round trip raises (TimeoutError and BrokenPipeError are OSErrors).
WS_ERRORS = (OSError, websocket.WebSocketException, ValueError, KeyError, TypeError)


class Alice:
    """One user's kernel WebSocket, reopened when a round trip broke it."""

    def __init__(self, t, token, kid):
        self.t, self.token, self.kid = t, token, kid
        self.kws = None
        self.failed = []      # (phase, ms, why) of every round trip that did not end in an ok reply
        self.opened, self.reconnects = 0, 0   # reconnects: opened again after a failure
        self.lock = threading.Lock()

    def connect(self):
        self.drop()
        self.kws = jws.KernelWS(self.t.url, self.token, self.kid, timeout=60)

    def drop(self):
        if self.kws is not None:
            self.kws.close()
            self.kws = None

    def round_trip(self, phase, timeout):
        """`1+1`: its latency in ms, or None when it failed (counted in self.failed)."""
        t0 = time.perf_counter()
        why = None
        with self.lock:
            try:
                if self.kws is None:
                    self.reconnects += self.opened
                    self.opened = 1
                    self.connect()
                    t0 = time.perf_counter()  # the reconnect is not the round trip
                r = self.kws.execute("1+1", timeout=timeout)
                content = r.reply["content"]
                if content.get("status") != "ok":
                    why = "reply %s: %s" % (content.get("status"), str(content)[:200])
            except WS_ERRORS as e:
                why = "%s: %s" % (type(e).__name__, str(e)[:200])
                self.drop()
            if self.kws is not None:  # what a late or stray reply left behind
                self.kws.seen.clear()
                self.kws.pending.clear()
        ms = (time.perf_counter() - t0) * 1000
        if why is None:
            return ms
        self.failed.append((phase, round(ms), why))
        return None


class KeepAlive(threading.Thread):
    """`with KeepAlive(alice):` pings alice's WebSocket every `every` s until the block ends."""

    def __init__(self, alice, every=10):
        super().__init__(daemon=True)
        self.alice, self.every, self.done = alice, every, threading.Event()
        self.problems = []

    def run(self):
        while not self.done.wait(self.every):
            with self.alice.lock:
                if self.alice.kws is None:
                    continue
                try:
                    jws.ping(self.alice.kws, timeout=30)
                except WS_ERRORS as e:
                    self.problems.append("%s: %s" % (type(e).__name__, str(e)[:200]))
                    self.alice.drop()  # reopened by the next round trip

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.join(60)
        return False
