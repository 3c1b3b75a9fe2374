# SPDX-License-Identifier: Apache-2.0
# WebSocket keepalive (--ws-ping-interval): an idle connection is pinged; a peer that answers stays,
# one that does not is dropped after two intervals, so dead clients do not hold kernels' connections.
import time

import pytest
import websocket

import targets as tm
from conftest import cellgate_only
from jupyter_ws import KernelWS

INTERVAL = 1


@pytest.fixture
def connected(target):
    """(target, kernel id, a client that got its kernel_info_reply) on a gateway pinging every INTERVAL."""
    cellgate_only(target, "--ws-ping-interval is cellgate's")
    t = tm.CellgateTarget(target.binary, spawner=target.spawner, extra_args=["--ws-ping-interval", str(INTERVAL)])
    t.start()
    kid = t.start_kernel()["id"]
    c = KernelWS(t.url, t.token, kid)
    c.request("shell", "kernel_info_request", {})
    yield t, kid, c
    c.close()
    t.stop()


def connections(t, kid):
    return t.get("api/kernels/" + kid).json()["connections"]


def wait_connections(t, kid, want, timeout):
    deadline = time.monotonic() + timeout
    while connections(t, kid) != want and time.monotonic() < deadline:
        time.sleep(0.1)
    return connections(t, kid)


def test_an_idle_client_that_answers_pings_stays_connected(connected):
    t, kid, c = connected
    pings = 0
    deadline = time.monotonic() + 4 * INTERVAL + 0.5
    while time.monotonic() < deadline:
        c.ws.settimeout(0.2)
        try:
            opcode, _ = c.ws.recv_data_frame(control_frame=True)  # answers a ping with a pong
        except websocket.WebSocketTimeoutException:
            continue
        pings += opcode == websocket.ABNF.OPCODE_PING
    # Four intervals with nothing from the client but pongs: pinged each time, never dropped.
    assert pings >= 2, pings
    assert connections(t, kid) == 1
    res = c.execute("6*7")
    assert res.reply["content"]["status"] == "ok", res.reply


def test_a_client_that_never_answers_is_dropped(connected):
    t, kid, c = connected
    assert wait_connections(t, kid, 1, 10) == 1
    # Not reading: the ping waits in this socket unanswered. One interval later the gateway gives up
    # on the connection (Beast's idle timeout, twice the ping interval in all).
    assert wait_connections(t, kid, 0, 2 * INTERVAL + 8) == 0
    # The client finds its connection gone once it reads past the ping.
    with pytest.raises((websocket.WebSocketException, ConnectionError, OSError)):
        for _ in range(100):
            c.ws.settimeout(5)
            c.ws.recv_data_frame(control_frame=True)
