# SPDX-License-Identifier: Apache-2.0
# Debian's `jupyter server --gateway-url` in front of the target: a cell runs through the front server.
"""The front server proxies kernels to the target with its GatewayClient (jupyter_server 1.23).
Against the jupyter_server target this proves the test itself (a jupyter server as gateway);
against cellgate it is the compatibility check that matters."""
import pytest
import requests

import targets as tm
from jupyter_ws import KernelWS, msg_type, parent_id


def wait_kernel_info(c, total=60, every=3):
    """Like a front end on connect: repeat kernel_info_request until one is answered (a request
    written while the front server is still connecting to the gateway may be lost)."""
    ids = []
    for _ in range(total // every):
        ids.append(c.send("shell", "kernel_info_request", {}))
        try:
            return c.wait_for(lambda m: parent_id(m) in ids
                              and msg_type(m) == "kernel_info_reply", timeout=every)
        except TimeoutError:
            continue
    raise TimeoutError("no kernel_info_reply through the front server in %ss" % total)


@pytest.fixture(scope="module")
def front(target):
    f = tm.JupyterServerTarget(token="front-token", extra_args=[
        "--gateway-url=" + target.url.rstrip("/"),
        "--GatewayClient.auth_token=" + target.token,
        "--GatewayClient.request_timeout=60"])
    f.start()
    yield f
    f.stop()


def gateway_kernel_ids(target):
    return {k["id"] for k in target.get("api/kernels").json()}


def test_front_lists_gateway_kernelspecs(target, front):
    specs = front.get("api/kernelspecs").json()
    assert tm.TEST_SPEC in specs["kernelspecs"], specs["kernelspecs"].keys()
    res = specs["kernelspecs"][tm.TEST_SPEC]["resources"]
    logo = front.get(res["logo-64x64"].lstrip("/"))  # served by the front, fetched from the gateway
    assert logo.status_code == 200 and logo.content == tm.LOGO_BYTES


def test_cell_through_front_server(target, front):
    r = front.post("api/kernels", json={"name": "python3"})
    assert r.status_code == 201, r.text
    kid = r.json()["id"]
    try:
        assert kid in gateway_kernel_ids(target)
        one = front.get("api/kernels/" + kid)  # front refreshes the model from the gateway
        assert one.status_code == 200 and one.json()["id"] == kid, one.text
        c = KernelWS(front.url, front.token, kid, protocol="legacy")
        try:
            assert wait_kernel_info(c)["content"]["status"] == "ok"
            res = c.execute("1+1")
            assert res.result_text() == "2"
            assert res.reply["content"]["status"] == "ok"
            assert c.execute("print('via front')").stdout() == "via front\n"
        finally:
            c.close()
        assert front.post("api/kernels/%s/interrupt" % kid, json={}).status_code == 204
    finally:
        d = front.delete_kernel(kid)
    assert d.status_code == 204
    assert kid not in gateway_kernel_ids(target)


def test_session_through_front_server(target, front):
    body = {"path": "front.ipynb", "type": "notebook", "name": "front.ipynb",
            "kernel": {"name": "python3"}}
    r = front.post("api/sessions", json=body)
    assert r.status_code == 201, r.text
    s = r.json()
    try:
        assert s["kernel"]["id"] in gateway_kernel_ids(target)
    finally:
        assert front.api("DELETE", "api/sessions/" + s["id"]).status_code == 204
    assert s["kernel"]["id"] not in gateway_kernel_ids(target)


def test_front_rejects_without_its_token(front):
    r = requests.get(front.url + "api/kernels", timeout=30)
    assert r.status_code == front.unauth_status
